"""The wheel a user installs, not the checkout: ``python -m build`` makes the sdist and the wheel;
scripts/check-wheel installs the wheel into a fresh venv (this interpreter's site-packages lend
torch and chromadb; ``retrieval_gate`` itself must import from the venv) and runs ``--help``,
``init`` on a sample repository (first eval, baseline, audit), ``validate`` and ``compare``. Then
the same venv's ``retrieval-gate action`` — the second way to run in CI, in a team's own Python
job — runs a pull request against the fake GitHub API over HTTP and posts the sticky comment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.e2e.action_harness import RUNNER_PREFIXES, TOKEN, parse_github_output
from tests.e2e.fake_github import serve_fake_github

pytestmark = pytest.mark.model

REPO = Path(__file__).resolve().parents[2]
ZERO_SHA = "0" * 40


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=300, check=False, env=env, cwd=out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def checked(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    (wheel,) = dist.glob("*.whl")
    work = tmp_path_factory.mktemp("wheel-check")
    done = subprocess.run([str(REPO / "scripts" / "check-wheel"), str(wheel), str(work)], capture_output=True,
                          text=True, timeout=900, check=False, cwd=work)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "check-wheel: ok" in done.stdout and "verdict: PASS" in done.stdout
    return work


def test_build_makes_an_sdist_and_a_wheel_with_the_templates_and_no_tests(dist: Path):
    (wheel,) = dist.glob("retrieval_gate-*-py3-none-any.whl")
    (sdist,) = dist.glob("retrieval_gate-*.tar.gz")
    names = zipfile.ZipFile(wheel).namelist()
    assert "retrieval_gate/cli/init.py" in names and "retrieval_gate/scaffold/texts.py" in names
    assert any(n.startswith("retrieval_gate/render/templates/") and n.endswith(".j2") for n in names)
    assert not any(n.startswith(("tests/", "examples/")) for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "retrieval-gate = retrieval_gate.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    with tarfile.open(sdist) as tar:
        assert any(m.name.endswith("src/retrieval_gate/release_pin.py") for m in tar.getmembers())


def test_the_installed_wheel_inits_a_repository_and_compares_green(checked: Path):
    repo = checked / "repo"
    from_wheel = subprocess.run([str(checked / "venv" / "bin" / "python"), "-c",
                                 "import retrieval_gate; print(retrieval_gate.__file__)"],
                                capture_output=True, text=True, check=True, cwd=repo,
                                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}).stdout.strip()
    assert from_wheel.startswith(str(checked / "venv")) and not from_wheel.startswith(str(REPO))
    caller = (repo / ".github" / "workflows" / "retrieval.yml").read_text(encoding="utf-8")
    assert f"uses: owner/retrieval-gate/.github/workflows/gate.yml@{ZERO_SHA}" in caller
    baseline = json.loads((repo / "baselines" / "default.json").read_text(encoding="utf-8"))
    results = json.loads((repo / "out" / "results.json").read_text(encoding="utf-8"))
    scored = [c for c in results["cases"] if c["gold"]]
    hit5 = sum(1.0 for c in scored if set(c["retrieved"][:5]) & set(c["gold"])) / len(scored)  # by hand
    # the baseline keeps 6 decimals
    assert baseline["aggregates"]["overall"]["hit@5"]["value"] == pytest.approx(hit5, abs=5e-7)
    assert baseline["aggregates"]["overall"]["hit@5"]["n"] == len(scored) == 55
    comparison = json.loads((repo / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert comparison["verdict"] == "pass"


def python_job_env(*, job: str) -> dict[str, str]:
    """The environment examples/workflows/python-job.yml gives `retrieval-gate action` in ``job``:
    the workflow's env, then the step's (``${{ github.token }}`` → the fake's token)."""
    wf = yaml.safe_load((REPO / "examples" / "workflows" / "python-job.yml").read_text(encoding="utf-8"))
    (step,) = [s for s in wf["jobs"][job]["steps"] if s.get("run") == "retrieval-gate action"]
    merged = {**wf["env"], **step["env"]}
    return {k: TOKEN if v == "${{ github.token }}" else str(v) for k, v in merged.items()}


def test_the_installed_wheels_action_posts_the_comment_in_a_python_job(checked: Path, tmp_path: Path):
    repo = checked / "repo"
    with serve_fake_github(token=TOKEN) as github:
        base = github.commit("main", {"baselines/default.json": (repo / "baselines" / "default.json").read_text(
            encoding="utf-8")}, message="baseline")
        event = {"number": 5, "pull_request": {"number": 5, "base": {"sha": base, "ref": "main"},
                                               "head": {"sha": "f" * 40, "repo": {"full_name": github.repository}}},
                 "repository": {"default_branch": "main"}}
        (tmp_path / "event.json").write_text(json.dumps(event), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(RUNNER_PREFIXES) and k != "PYTHONPATH"}
        env.update({
            "HF_HUB_OFFLINE": "1", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_REPOSITORY": github.repository,
            "GITHUB_API_URL": github.api_url, "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_WORKSPACE": str(repo), "GITHUB_SHA": "c" * 40, "GITHUB_REF": "refs/pull/5/merge",
            "GITHUB_RUN_ID": "42", "GITHUB_OUTPUT": str(tmp_path / "output"),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        })
        env.update(python_job_env(job="compare"))  # the documented workflow's INPUT_* (only those)
        done = subprocess.run([str(checked / "venv" / "bin" / "retrieval-gate"), "action"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-4000:]
        outputs = parse_github_output((tmp_path / "output").read_text(encoding="utf-8"))
        assert outputs["mode"] == "pr" and outputs["verdict"] == "pass" and outputs["n"] == "55"
        (comment,) = github.comments[5]
        assert comment["body"].startswith("<!-- retrieval-gate:default -->")
        assert TOKEN not in done.stdout + done.stderr
