"""The action's image, run exactly as GitHub's runner starts a Docker container action: the
workspace mounted at /github/workspace and the working directory there, HOME at /github/home,
the event file and the GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files mounted, GITHUB_* and INPUT_* in
the environment. Report mode runs with no network at all (the bundled model loads offline); the
API flows (push to main, pull request from a branch and from a fork, rerun, workflow_dispatch)
run against the fake GitHub API over HTTP on this machine's loopback (``--network host``), and so
do the two privileged steps of the split workflows: ``write-baseline`` from the eval job's
results.json, and ``comment`` from a fork run's results.json and comparison.json.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from tests.e2e.action_harness import TOKEN
from tests.e2e.fake_github import FakeGitHub, serve_fake_github
from tests.image.conftest import REPO, Built, ContainerRun, Runner, assert_token_absent, example_workspace

MARKER = "<!-- retrieval-gate:default -->"
BASELINE = "baselines/default.json"


def _torch_baseline() -> dict:
    """This repository's baseline of the example suite, made by the torch backend (its model hash
    carries no ``+onnx``): per case the ranked cards and every score."""
    baseline = json.loads((REPO / BASELINE).read_text(encoding="utf-8"))
    assert "+" not in baseline["fingerprint"]["config"]["model_sha256"], "the baseline is not the torch backend's"
    return baseline


def _assert_torch_numbers_case_for_case(results: dict) -> None:
    baseline = _torch_baseline()
    by_id = {c["id"]: c for c in results["cases"]}
    assert sorted(by_id) == sorted(baseline["cases"])
    for case_id, expected in baseline["cases"].items():
        got = by_id[case_id]
        ranked = expected.get("ranked", [])
        assert got["retrieved"][:len(ranked)] == ranked, case_id
        for key, value in zip(baseline["score_keys"], expected.get("scores", []), strict=False):
            assert got["scores"][key] == pytest.approx(value, abs=5e-7), (case_id, key)  # 6 decimals stored


def _values_of(key: str, tree: object) -> list:
    if isinstance(tree, dict):
        return [v for k, v in tree.items() if k == key] + [x for v in tree.values() for x in _values_of(key, v)]
    if isinstance(tree, list):
        return [x for v in tree for x in _values_of(key, v)]
    return []


def _hit_at(k: int, results: dict) -> float:
    """hit@k by hand from the ranked card ids in results.json: cases with gold only."""
    scored = [c for c in results["cases"] if c["gold"]]
    return sum(1.0 for c in scored if set(c["retrieved"][:k]) & set(c["gold"])) / len(scored)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One checkout for the module: the store written by the first run is reused by the next ones."""
    return example_workspace(tmp_path_factory.mktemp("image") / "workspace")


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, workspace: Path, image: Built) -> Runner:
    return Runner(tmp_path_factory.mktemp("runner"), workspace, image.tag)


@pytest.fixture
def github() -> FakeGitHub:
    with serve_fake_github(token=TOKEN) as fake:
        yield fake


def _api(runner: Runner, github: FakeGitHub, **kwargs) -> ContainerRun:
    run = runner.run(network="host", api_url=github.api_url, repository=github.repository, **kwargs)
    assert_token_absent(run.everything(), runner.workspace)
    return run


def _pr_event(github: FakeGitHub, number: int, base_sha: str, *, fork: bool = False) -> dict:
    return {"action": "synchronize", "number": number,
            "pull_request": {"number": number, "base": {"sha": base_sha, "ref": "main",
                                                        "repo": {"full_name": github.repository}},
                             "head": {"sha": "f" * 40, "ref": "feature",
                                      "repo": {"full_name": "someone/rag" if fork else github.repository}}},
            "repository": {"full_name": github.repository, "default_branch": "main"}}


def test_report_mode_runs_offline_and_writes_outputs_summary_and_files(runner, workspace):
    run = runner.run(event_name="push", event={"ref": "refs/heads/feature"}, ref="refs/heads/feature",
                     inputs={"config": "retrieval-gate.yml", "mode": "report"}, network="none")
    assert run.exit_code == 0, run.stderr[-3000:]
    assert run.outputs["mode"] == "report" and run.outputs["verdict"] == "none"
    results = json.loads((workspace / run.outputs["results_path"]).read_text(encoding="utf-8"))
    assert run.outputs["n"] == "55"  # 62 cases, 7 without gold
    assert run.outputs["hit_at_k"] == f"{_hit_at(5, results):.4f}"
    assert json.loads(run.outputs["metrics_json"])["hit@5"]["n"] == 55
    assert run.outputs["delta_hit_at_k"] == "" and run.outputs["comparison_path"] == ""
    # The default image embeds on ONNX Runtime (the export checked at build time) and must rank as
    # the torch backend does: this cold run against the torch backend's baseline, case for case.
    hashes = set(_values_of("model_sha256", results))
    assert hashes and all(h.endswith("+onnx") for h in hashes), hashes
    _assert_torch_numbers_case_for_case(results)
    assert "hit@5" in run.summary and run.summary.count(MARKER) <= 1
    html = workspace / run.outputs["html_path"]
    assert html.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    # Written by the container's root: later steps (the runner's user) can read them, not rewrite them.
    for path in (workspace / "retrieval-gate-out").iterdir():
        info = path.stat()
        assert info.st_uid == 0 and info.st_mode & stat.S_IROTH, path
    store = workspace / ".retrieval-gate" / "store"
    assert store.is_dir()
    # actions/cache saves the store as the runner's user: every file must be readable by others
    assert all(p.stat().st_mode & stat.S_IROTH for p in store.rglob("*")), "a store file is not world-readable"
    assert_token_absent(run.everything(), workspace)


def test_a_second_report_run_reuses_the_store_and_gives_the_same_numbers(runner, workspace):
    first = json.loads((workspace / "retrieval-gate-out" / "results.json").read_text(encoding="utf-8"))
    run = runner.run(event_name="push", event={"ref": "refs/heads/feature"}, ref="refs/heads/feature",
                     inputs={"config": "retrieval-gate.yml", "mode": "report"}, network="none")
    assert run.exit_code == 0, run.stderr[-3000:]
    again = json.loads((workspace / run.outputs["results_path"]).read_text(encoding="utf-8"))
    assert [c["retrieved"] for c in again["cases"]] == [c["retrieved"] for c in first["cases"]]


def test_push_to_main_writes_the_baseline_through_the_api(runner, github):
    run = _api(runner, github, event_name="push", ref="refs/heads/main", sha="b" * 40,
               event={"ref": "refs/heads/main", "repository": {"full_name": github.repository,
                                                               "default_branch": "main"}})
    assert run.exit_code == 0, run.stderr[-3000:]
    assert run.outputs["mode"] == "update-baseline" and run.outputs["baseline_commit"]
    written = json.loads(github.file_at("main", BASELINE))
    assert [h["sha"] for h in written["history"]][-1] == "b" * 40
    assert len(written["cases"]) == 62
    (update,) = github.requests("PATCH", r"/git/refs/heads/main$")  # one commit: the baseline and its audit
    assert update.status == 200 and update.authorization == f"token {TOKEN}"
    assert github.file_at("main", "baselines/default.audit.json") is not None


def test_pull_request_compares_with_the_base_and_a_rerun_edits_the_sticky_comment(runner, github):
    # The base carries this repository's own baseline of the example suite: the image's numbers
    # must equal the ones measured outside the container.
    base = github.commit("main", {BASELINE: (REPO / BASELINE).read_text(encoding="utf-8")}, message="baseline")
    event = _pr_event(github, 5, base)
    first = _api(runner, github, event_name="pull_request", event=event, ref="refs/pull/5/merge", sha="c" * 40)
    assert first.exit_code == 0, first.stderr[-3000:]
    assert first.outputs["mode"] == "pr" and first.outputs["verdict"] == "pass"
    assert first.outputs["baseline_ref"] == base and first.outputs["delta_hit_at_k"] == "0.0000"
    assert first.outputs["regressed"] == "false"
    (comment,) = github.comments[5]
    assert comment["body"].startswith(MARKER) and first.outputs["comment_url"] == comment["html_url"]
    assert (runner.workspace / first.outputs["comment_file"]).read_text(encoding="utf-8") == comment["body"]
    assert MARKER in first.summary

    rerun = _api(runner, github, event_name="pull_request", event=event, ref="refs/pull/5/merge", sha="c" * 40)
    assert rerun.exit_code == 0, rerun.stderr[-3000:]
    assert len(github.comments[5]) == 1 and len(github.requests("PATCH")) == 1


@pytest.mark.parametrize(("config", "exit_code"), [("retrieval-gate.yml", 0), ("gate.yml", 1)])
def test_fork_pull_request_cannot_comment_and_fails_only_on_its_gate(runner, github, config, exit_code):
    # A fork's token is read-only: GitHub answers 403 to the comment, which never fails the job.
    # gate.yml adds a floor of 1.0 on recall@10 (the suite scores 0.99): that gate fails (exit 1) under
    # both readings — removing unjudged cards cannot bring a card from beyond the stored top 10 — so
    # the verdict is "fail", not "needs-labels" (a hit@5 floor would be: the condensed reading passes it).
    gate = (REPO / "retrieval-gate.yml").read_text(encoding="utf-8") + "    gate:\n      floors: {recall@10: 1.0}\n"
    (runner.workspace / "gate.yml").write_text(gate, encoding="utf-8")
    base = github.commit("main", {BASELINE: (REPO / BASELINE).read_text(encoding="utf-8"), "gate.yml": gate},
                         message="baseline")
    github.fail("POST", r"/issues/8/comments$", status=403, body={"message": "Resource not accessible by integration"})
    run = _api(runner, github, event_name="pull_request", event=_pr_event(github, 8, base, fork=True),
               inputs={"config": config}, ref="refs/pull/8/merge", sha="d" * 40)
    assert run.exit_code == exit_code, run.stderr[-3000:]
    assert run.outputs["verdict"] == ("fail" if exit_code else "pass")
    assert run.outputs["comment_url"] == "" and github.comments.get(8, []) == []
    assert any(line.startswith("::warning") and "fork" in line for line in run.stdout.splitlines())
    body = (runner.workspace / run.outputs["comment_file"]).read_text(encoding="utf-8")
    assert body.startswith(MARKER) and body in run.summary


def test_workflow_dispatch_compares_with_the_default_branch(runner, github):
    github.commit("main", {BASELINE: (REPO / BASELINE).read_text(encoding="utf-8")}, message="baseline")
    run = _api(runner, github, event_name="workflow_dispatch", ref="refs/heads/main",
               event={"ref": "refs/heads/main", "inputs": {},
                      "repository": {"full_name": github.repository, "default_branch": "main"}})
    assert run.exit_code == 0, run.stderr[-3000:]
    assert run.outputs["mode"] == "pr" and run.outputs["baseline_ref"] == "main"
    assert run.outputs["verdict"] == "pass" and github.requests(path_regex="/comments") == []


def _push_main(github: FakeGitHub) -> dict:
    return {"ref": "refs/heads/main", "repository": {"full_name": github.repository, "default_branch": "main"}}


def _hand_over(workspace: Path, run: ContainerRun, folder: str, *names: str) -> None:
    """What upload-artifact + download-artifact do between two jobs: copy the run's files."""
    target = workspace / folder
    target.mkdir(exist_ok=True)
    for name in names:
        shutil.copyfile(workspace / run.outputs[f"{name}_path"], target / f"{name}.json")


def test_split_refresh_the_writer_stores_the_eval_jobs_results(runner, github):
    # baseline-eval: mode report, no network (no token use at all); baseline: mode write-baseline.
    evaluated = runner.run(event_name="push", event=_push_main(github), ref="refs/heads/main", sha="e" * 40,
                           inputs={"config": "retrieval-gate.yml", "mode": "report"}, network="none")
    assert evaluated.exit_code == 0, evaluated.stderr[-3000:]
    _hand_over(runner.workspace, evaluated, "baseline-results", "results")
    results = json.loads((runner.workspace / "baseline-results" / "results.json").read_text(encoding="utf-8"))
    run = _api(runner, github, event_name="push", event=_push_main(github), ref="refs/heads/main", sha="e" * 40,
               inputs={"config": "retrieval-gate.yml", "mode": "write-baseline",
                       "results_file": "baseline-results/results.json"})
    assert run.exit_code == 0, run.stderr[-3000:]
    assert run.outputs["mode"] == "write-baseline" and run.outputs["baseline_commit"]
    assert "no evaluation" in run.stdout + run.stderr
    written = json.loads(github.file_at("main", BASELINE))
    assert [h["sha"] for h in written["history"]] == ["e" * 40]
    hit = written["aggregates"]["overall"]["hit@5"]["value"]
    assert hit == pytest.approx(_hit_at(5, results), abs=5e-7)  # the baseline stores 6 decimals
    assert len(written["cases"]) == 62


def test_fork_comment_is_rendered_from_the_fork_runs_data_and_posted_to_the_verified_pr(runner, github):
    base = github.commit("main", {BASELINE: (REPO / BASELINE).read_text(encoding="utf-8")}, message="baseline")
    github.fail("POST", r"/issues/9/comments$", status=403, body={"message": "Resource not accessible by integration"})
    fork = _api(runner, github, event_name="pull_request", event=_pr_event(github, 9, base, fork=True),
                inputs={"config": "retrieval-gate.yml"}, ref="refs/pull/9/merge", sha="d" * 40)
    assert fork.exit_code == 0 and github.comments.get(9, []) == [], fork.stderr[-3000:]
    _hand_over(runner.workspace, fork, "pr-artifact", "results", "comparison")
    github.add_pull(9, head_sha="f" * 40, base_sha=base, head_repo="someone/rag")
    event = {"workflow_run": {"id": 99, "event": "pull_request", "head_sha": "f" * 40,
                              "head_repository": {"full_name": "someone/rag"}},
             "repository": {"full_name": github.repository, "default_branch": "main"}}
    run = _api(runner, github, event_name="workflow_run", event=event, ref="refs/heads/main",
               inputs={"mode": "comment", "pr_number": "9", "results_file": "pr-artifact/results.json",
                       "comparison_file": "pr-artifact/comparison.json"})
    assert run.exit_code == 0, run.stderr[-3000:]
    (comment,) = github.comments[9]
    assert comment["body"].startswith(MARKER) and "Rendered by this repository's workflow" in comment["body"]
    assert run.outputs["mode"] == "comment" and run.outputs["comment_url"] == comment["html_url"]
    # the numbers posted are the fork run's (hit@5 recomputed by hand from its ranked lists)
    results = json.loads((runner.workspace / "pr-artifact" / "results.json").read_text(encoding="utf-8"))
    assert f"{_hit_at(5, results):.3f}" in comment["body"]
