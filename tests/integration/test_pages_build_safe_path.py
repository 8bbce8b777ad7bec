"""The GitHub ``pages-build`` job (.github/workflows/gate.yml) builds the history site in the
caller's checkout without importing the checkout's modules: its command line,
run as the job runs it in a repository whose root holds a ``jinja2.py`` and a
``retrieval_gate/__main__.py`` that print PWNED, runs the action's own code."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "print('PWNED')\n"


def pages_build_steps() -> list[dict]:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "gate.yml").read_text(encoding="utf-8"))
    return workflow["jobs"]["pages-build"]["steps"]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The caller's checkout as the job sees it: its own files at the root, the action's checkout
    in .retrieval-gate/action, one commit."""
    repo = tmp_path / "repo"
    (repo / "retrieval_gate").mkdir(parents=True)
    (repo / "jinja2.py").write_text(HOSTILE, encoding="utf-8")
    (repo / "retrieval_gate" / "__init__.py").write_text(HOSTILE, encoding="utf-8")
    (repo / "retrieval_gate" / "__main__.py").write_text(HOSTILE, encoding="utf-8")
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb\n    cases: cases.jsonl\n",
                                             encoding="utf-8")
    (repo / ".retrieval-gate").mkdir()
    (repo / ".retrieval-gate" / "action").symlink_to(ROOT, target_is_directory=True)
    git = ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "jinja2.py", "retrieval_gate", "retrieval-gate.yml"], check=True)
    subprocess.run([*git, "commit", "-qm", "the caller's tree"], check=True)
    return repo


def run_step(command: str, *, cwd: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    python = Path(sys.executable).parent  # the interpreter the tests run under, as setup-python's `python`
    env.update({"PATH": f"{python}{os.pathsep}{env.get('PATH', '')}", "GITHUB_WORKSPACE": str(cwd), **extra})
    return subprocess.run(["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_every_python_of_the_pages_build_job_runs_with_the_safe_path() -> None:
    runs = [step["run"] for step in pages_build_steps() if "run" in step]
    calls = [m.group() for run in runs for m in re.finditer(r"\bpython3?\b[^\n]*", run)]
    assert len(calls) == 3, calls
    assert all(re.match(r"python3? -P ", call) for call in calls), calls


@pytest.mark.skipif(shutil.which("bash") is None, reason="the job's shell")
def test_the_history_step_runs_the_actions_code_not_the_checkouts(checkout: Path, tmp_path: Path) -> None:
    [build] = [step for step in pages_build_steps() if step.get("name") == "Build the history site"]
    extra = {"CONFIG": "retrieval-gate.yml", "RUNNER_TEMP": str(tmp_path)}
    done = run_step(build["run"], cwd=checkout, extra=extra)
    assert "PWNED" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.returncode in (0, 2), done.stdout + done.stderr
    assert "baselines/default.json" in done.stderr  # the real command spoke: this tree has no baseline yet
    # The same line without -P is what the job ran before: the checkout's module runs first.
    unsafe = run_step(build["run"].replace("python -P ", "python "), cwd=checkout, extra=extra)
    assert "PWNED" in unsafe.stdout
