"""The action with the real engine — the bundled model, a real Chroma store, the real baseline,
compare and render code — run as a separate process exactly as the Docker ENTRYPOINT runs it
(``retrieval-gate action`` with the runner's environment), against the fake GitHub API over HTTP.

Merge (push to main: the baseline is written through the contents API) → PR (the baseline is read
at the base sha, compared, the sticky comment posted) → the PR again (the comment is edited) →
the fork-comment job (``workflow_run``: the comment rendered from the PR run's JSON, no eval) →
the baseline-write job (``write-baseline``: the PR run's results written, no eval).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.action_harness import RUNNER_PREFIXES, TOKEN, ActionRun, input_defaults, parse_github_output
from tests.e2e.fake_github import FakeGitHub

pytestmark = pytest.mark.model

CARDS = [
    ("refund-card", "Card refunds", "A refund to a credit card shows up on the statement in 5 to 10 business days."),
    ("reset-password", "Reset your password", "Click 'forgot password' on the login page; the email link is valid "
                                              "for one hour."),
    ("two-factor", "Two-factor authentication", "Turn on two-factor authentication with an authenticator app "
                                                "under Security settings."),
    ("export-reports", "Export reports", "Export any report to CSV or PDF from the Reports page."),
    ("late-fees", "Late fees", "Add an automatic late fee to overdue invoices, as a fixed amount or a percentage."),
    ("delete-account", "Delete your account", "Owners can delete the account under Settings; data is erased "
                                              "after 30 days."),
]
CASES = [
    ("c1", "How many days until a card refund appears on my statement?", ["refund-card"]),
    ("c2", "I forgot my password, how do I reset it?", ["reset-password"]),
    ("c3", "How can I export a report as a CSV file?", ["export-reports"]),
    ("c4", "Can overdue invoices get a late fee automatically?", ["late-fees"]),
    ("c5", "What is the capital of France?", []),  # no-answer: no score keys, its own slice
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "data").mkdir(parents=True)
    (ws / "data" / "kb.jsonl").write_text(
        "".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CARDS), encoding="utf-8")
    (ws / "data" / "cases.jsonl").write_text(
        "".join(json.dumps({"id": i, "query": q, "gold": g}) + "\n" for i, q, g in CASES), encoding="utf-8")
    (ws / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    kb: data/kb.jsonl\n    cases: data/cases.jsonl\n    k: [1, 3, 5]\n",
        encoding="utf-8")
    return ws


def _run(github: FakeGitHub, workspace: Path, tmp: Path, n: int, *, event_name: str, event: dict,
         ref: str, sha: str, inputs: dict[str, str] | None = None) -> ActionRun:
    runner = tmp / f"runner{n}"
    runner.mkdir()
    (runner / "event.json").write_text(json.dumps(event), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(RUNNER_PREFIXES)}
    env.update({
        "HF_HUB_OFFLINE": "1", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(runner / "event.json"), "GITHUB_REPOSITORY": github.repository,
        "GITHUB_API_URL": github.api_url, "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_WORKSPACE": str(workspace), "GITHUB_SHA": sha, "GITHUB_REF": ref, "GITHUB_RUN_ID": str(100 + n),
        "GITHUB_OUTPUT": str(runner / "output"), "GITHUB_STEP_SUMMARY": str(runner / "summary"),
    })
    env.update({f"INPUT_{k.upper()}": v for k, v in {**input_defaults(), **(inputs or {})}.items()})
    proc = subprocess.run([sys.executable, "-m", "retrieval_gate", "action"], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    output_text = (runner / "output").read_text(encoding="utf-8") if (runner / "output").exists() else ""
    summary = (runner / "summary").read_text(encoding="utf-8") if (runner / "summary").exists() else ""
    return ActionRun(exit_code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr,
                     outputs=parse_github_output(output_text), summary=summary, output_text=output_text)


def _hit_at(k: int, results: dict) -> float:
    """hit@k by hand from the ranked card ids in results.json: cases with gold only."""
    scored = [c for c in results["cases"] if c["gold"]]
    return sum(1.0 for c in scored if set(c["retrieved"][:k]) & set(c["gold"])) / len(scored)


def test_merge_then_pr_with_the_real_engine(github, workspace, tmp_path):
    merged = _run(github, workspace, tmp_path, 1, event_name="push", ref="refs/heads/main", sha="a" * 40,
                  event={"ref": "refs/heads/main", "repository": {"default_branch": "main"}})
    assert merged.exit_code == 0, merged.stderr
    assert merged.outputs["mode"] == "update-baseline"
    written = github.file_at("main", "baselines/default.json")
    assert written is not None
    baseline = json.loads(written)
    assert [h["sha"] for h in baseline["history"]] == ["a" * 40]
    assert sorted(baseline["cases"]) == ["c1", "c2", "c3", "c4", "c5"]
    audit = json.loads(github.file_at("main", "baselines/default.audit.json") or "{}")  # in the same commit
    assert audit["counts"]["cases"] == 5 and merged.outputs["audit_commit"] == merged.outputs["baseline_commit"]

    base = github.branches["main"]
    pr_event = {"number": 3, "pull_request": {"number": 3, "base": {"sha": base, "ref": "main"},
                                             "head": {"sha": "f" * 40, "repo": {"full_name": github.repository}}},
                "repository": {"default_branch": "main"}}
    first = _run(github, workspace, tmp_path, 2, event_name="pull_request", event=pr_event,
                 ref="refs/pull/3/merge", sha="c" * 40)
    assert first.exit_code == 0, first.stderr
    results = json.loads((workspace / first.outputs["results_path"]).read_text(encoding="utf-8"))
    assert first.outputs["hit_at_k"] == f"{_hit_at(5, results):.4f}"
    assert first.outputs["n"] == "4"  # the no-answer case has no score keys
    assert first.outputs["verdict"] == "pass" and first.outputs["delta_hit_at_k"] == "0.0000"
    assert json.loads(first.outputs["metrics_json"])["hit@5"]["n_paired"] == 4
    (comment,) = github.comments[3]
    assert comment["body"].startswith("<!-- retrieval-gate:default -->")
    assert (workspace / first.outputs["comment_file"]).read_text(encoding="utf-8") == comment["body"]
    assert (workspace / first.outputs["html_path"]).read_text(encoding="utf-8").lstrip().lower().startswith(
        "<!doctype html")
    assert "<!-- retrieval-gate:default -->" in first.summary
    assert "Golden-set audit" not in comment["body"]  # the same data as the base's audit: nothing new

    second = _run(github, workspace, tmp_path, 3, event_name="pull_request", event=pr_event,
                  ref="refs/pull/3/merge", sha="c" * 40)
    assert second.exit_code == 0, second.stderr
    assert len(github.comments[3]) == 1 and len(github.requests("PATCH", "/issues/comments/")) == 1  # new run link
    for run in (merged, first, second):
        assert TOKEN not in run.everything()

    # The privileged jobs of the split workflows: real parsing, rendering and baseline update of
    # the files the PR run wrote, no evaluation (no store is opened: the process never embeds).
    github.add_pull(3, head_sha="f" * 40, base_sha=base, head_repo=github.repository)
    fork = _run(github, workspace, tmp_path, 4, event_name="workflow_run", ref="refs/heads/main", sha=base,
                event={"workflow_run": {"id": 77, "head_sha": "f" * 40,
                                        "head_repository": {"full_name": github.repository}}},
                inputs={"mode": "comment", "pr_number": "3", "results_file": first.outputs["results_path"],
                        "comparison_file": first.outputs["comparison_path"], "out_dir": "fork-out"})
    assert fork.exit_code == 0, fork.stderr
    (comment,) = github.comments[3]
    assert comment["body"].startswith("<!-- retrieval-gate:default -->\n> ℹ️ Rendered by this repository's workflow")
    hit = f"{float(first.outputs['hit_at_k']):.3f}"
    # baseline → this run, rendered here (n < 30: the row is marked indicative, as every such row is)
    assert f"| **hit@5** · _indicative_ | {hit} | {hit} | " in comment["body"]
    written = _run(github, workspace, tmp_path, 5, event_name="push", ref="refs/heads/main", sha="d" * 40,
                   event={"ref": "refs/heads/main", "repository": {"default_branch": "main"}},
                   inputs={"mode": "write-baseline", "results_file": first.outputs["results_path"],
                           "out_dir": "write-out"})
    assert written.exit_code == 0, written.stderr
    history = json.loads(github.file_at("main", "baselines/default.json") or "{}")["history"]
    assert [h["sha"] for h in history] == ["a" * 40, "d" * 40]
    assert "eval:" not in written.stdout + written.stderr and "embed" not in written.stderr
    for run in (fork, written):
        assert TOKEN not in run.everything()
