"""The action on push events and baseline refreshes, end to end against the fake GitHub API:
the baseline (and the suite's audit beside it) is written to the evaluated branch in one commit
through the Git Data API, with ``[skip ci]``, the branch moved only if it did not move meanwhile;
concurrent writers are merged, never lost."""

from __future__ import annotations

import json

import pytest

from tests.e2e.action_harness import ActionWorld
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_github import FakeGitHub, Logged

BASELINE = "baselines/default.json"
AUDIT = "baselines/default.audit.json"
OURS = "a" * 40  # GITHUB_SHA of the run under test
THEIRS = "b" * 40  # another merge whose run writes first


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(scores={f"q{i}": 1.0 for i in range(10)})


def _push(world: ActionWorld, *, ref: str = "refs/heads/main", inputs: dict[str, str] | None = None):
    return world.run(event_name="push", event=world.push_event(ref=ref), ref=ref, sha=OURS, inputs=inputs)


def _history(github: FakeGitHub, branch: str = "main") -> list[str]:
    text = github.file_at(branch, BASELINE)
    assert text is not None
    return [entry["sha"] for entry in json.loads(text)["history"]]


def _commits(github: FakeGitHub) -> list[Logged]:
    """The commits the action made through the Git Data API."""
    return github.requests("POST", "/git/commits$")


def _ref_updates(github: FakeGitHub) -> list[Logged]:
    return github.requests("PATCH", "/git/refs/heads/main$")


def test_first_push_to_the_default_branch_creates_the_baseline_and_its_audit_in_one_commit(world, github):
    start = github.branches["main"]
    run = _push(world)
    assert run.exit_code == 0 and run.outputs["mode"] == "update-baseline"
    (commit,) = _commits(github)
    assert commit.body["parents"] == [start]  # on top of the head that was read
    assert commit.body["message"] == f"retrieval-gate: update {BASELINE} and {AUDIT} for {OURS[:12]} [skip ci]"
    (update,) = _ref_updates(github)
    assert update.body == {"sha": github.branches["main"], "force": False}  # never forced
    assert github.parents[github.branches["main"]] == [start]  # one commit holds both files
    assert github.file_at("main", AUDIT) is not None and github.file_at(start, AUDIT) is None
    assert _history(github) == [OURS]
    assert run.outputs["baseline_commit"] == run.outputs["audit_commit"] == github.branches["main"]
    assert run.outputs["verdict"] == "no-baseline"
    local = (world.workspace / run.outputs["baseline_file"]).read_text(encoding="utf-8")
    assert local == github.file_at("main", BASELINE)
    assert f"Baseline `{BASELINE}` updated on `main`" in run.summary
    assert github.requests("PUT") == []  # no contents-API write


def test_push_updates_the_baseline_read_at_the_head_and_keeps_history(world, github, engine):
    old = baseline_text(scores={f"q{i}": 1.0 for i in range(10)}, sha=THEIRS, history=3)
    head = github.commit("main", {BASELINE: old}, message="older baseline")
    run = _push(world)
    assert run.exit_code == 0
    assert [r.query["ref"] for r in github.requests("GET", f"/contents/{BASELINE}$")] == [[head]]
    (commit,) = _commits(github)
    assert commit.body["parents"] == [head]
    assert _history(github) == [f"{0:040x}", f"{1:040x}", THEIRS, OURS]
    assert run.outputs["verdict"] == "pass" and run.outputs["delta_hit_at_k"] == "0.0000"


def test_an_unchanged_audit_is_left_out_of_the_next_commit(world, github):
    assert _push(world).exit_code == 0
    audit = github.file_at("main", AUDIT)
    again = world.run(event_name="push", event=world.push_event(ref="refs/heads/main"), ref="refs/heads/main",
                      sha=THEIRS)  # the next merge: a new history entry, the same KB and cases
    assert again.exit_code == 0
    assert _commits(github)[-1].body["message"] == f"retrieval-gate: update {BASELINE} for {THEIRS[:12]} [skip ci]"
    assert again.outputs["audit_commit"] == "" and again.outputs["baseline_commit"] == github.branches["main"]
    assert github.file_at("main", AUDIT) == audit and _history(github) == [OURS, THEIRS]
    assert f"Audit `{AUDIT}` unchanged; nothing written for it." in again.summary


def test_concurrent_merge_rereads_merges_and_both_history_entries_survive(world, github, engine):
    github.commit("main", {BASELINE: baseline_text(scores={"q0": 1.0}, sha="0" * 40)}, message="base")

    def another_merge_writes_first() -> None:
        github.commit("main", {BASELINE: baseline_text(scores={"q0": 1.0}, sha=THEIRS, history=2)},
                      message="their baseline [skip ci]")

    github.before("PATCH", "/git/refs/heads/main$", another_merge_writes_first)
    run = _push(world)

    assert run.exit_code == 0
    assert [r.status for r in _ref_updates(github)] == [422, 200]  # not a fast forward, then ours on theirs
    first, second = _commits(github)
    assert first.body["parents"] != second.body["parents"]  # the retry built on their commit
    assert _history(github) == [f"{0:040x}", THEIRS, OURS]  # theirs kept, ours added: no lost update
    assert "after 2 attempts (concurrent writers)" in run.summary
    assert "re-reading baselines/default.json, baselines/default.audit.json and merging again" in run.stdout


def test_two_first_merges_racing_to_create_the_baseline(world, github, engine):
    def another_merge_creates_it_first() -> None:
        github.commit("main", {BASELINE: baseline_text(scores={"q0": 1.0}, sha=THEIRS)}, message="theirs")

    github.before("PATCH", "/git/refs/heads/main$", another_merge_creates_it_first)
    run = _push(world)
    assert run.exit_code == 0
    assert [r.status for r in _ref_updates(github)] == [422, 200]
    assert _history(github) == [THEIRS, OURS]


def test_a_refusal_while_the_branch_does_not_move_is_not_retried_forever(world, github):
    """E.g. a protected branch: GitHub keeps refusing; the branch never moves."""
    github.fail("PATCH", "/git/refs/heads/main$", status=422, body={"message": "Repository rule violations found"},
                times=10)
    run = _push(world)
    assert run.exit_code == 2
    assert len(_ref_updates(github)) == 2
    assert "Repository rule violations found" in run.stderr and "protected" in run.stderr
    assert github.file_at("main", BASELINE) is None


def test_push_to_another_branch_is_eval_and_summary_only(world, github):
    run = _push(world, ref="refs/heads/feature")
    assert run.exit_code == 0 and run.outputs["mode"] == "report"
    assert github.log == []  # no API call at all
    assert run.outputs["verdict"] == "none" and run.outputs["hit_at_k"] == "1.0000"
    assert run.summary.startswith("<!-- retrieval-gate:default -->")
    assert "| **hit@5** · _indicative_ | 1.000 | 10 |" in run.summary
    assert (world.workspace / run.outputs["results_path"]).is_file()


def test_dispatch_on_the_default_branch_refreshes_its_baseline(world, github):
    run = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/heads/main"),
                    ref="refs/heads/main", sha=OURS, inputs={"mode": "update-baseline"})
    assert run.exit_code == 0 and run.outputs["mode"] == "update-baseline"
    assert _history(github) == [OURS]


def test_dispatch_on_another_branch_does_not_write_its_baseline(world, github, engine):
    github.commit("release", {}, message="branch")
    run = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/heads/release"),
                    ref="refs/heads/release", sha=OURS, inputs={"mode": "update-baseline"})
    assert run.exit_code == 2 and "default branch (main) only; refused on release" in run.stderr
    assert github.requests("PATCH") == github.requests("POST") == [] and engine.calls == []


def test_update_baseline_on_a_tag_is_a_usage_error(world, github):
    run = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/tags/v1"),
                    ref="refs/tags/v1", sha=OURS, inputs={"mode": "update-baseline"})
    assert run.exit_code == 2 and "refs/heads/<branch>" in run.stderr
    assert github.requests("PATCH") == github.requests("POST") == []


def test_large_baseline_is_read_through_the_blob_api(world, github, engine):
    old = baseline_text(scores={f"q{i}": 1.0 for i in range(10)}, sha=THEIRS)
    github.large_file_threshold = 100  # the contents API omits content over the limit (1 MB on GitHub)
    github.commit("main", {BASELINE: old}, message="big")
    run = _push(world)
    assert run.exit_code == 0
    assert len(github.requests("GET", "/git/blobs/")) == 1
    assert _history(github) == [THEIRS, OURS]


def test_custom_baseline_dir_and_suite(world, github):
    (world.workspace / "rg.yml").write_text("suites:\n  nightly:\n    k: [1, 5]\n", encoding="utf-8")
    run = _push(world, inputs={"config": "rg.yml", "suite": "nightly", "baseline_dir": "eval/baselines/"})
    assert run.exit_code == 0
    assert run.outputs["baseline_path"] == "eval/baselines/nightly.json"
    assert github.file_at("main", "eval/baselines/nightly.json") is not None
    assert world.engine.configs[-1].k == (1, 5)


def test_the_refresh_commit_names_the_pull_request_its_measured_commit_merged(world, github):
    event = {**world.push_event(ref="refs/heads/main"),
             "head_commit": {"message": "Merge pull request #42 from team/faster-chunks\n\nFaster chunks"}}
    run = world.run(event_name="push", event=event, ref="refs/heads/main", sha=OURS)
    assert run.exit_code == 0
    (commit,) = _commits(github)
    assert commit.body["message"] == (f"retrieval-gate: update {BASELINE} and {AUDIT} for {OURS[:12]} "
                                      "(pull request #42) [skip ci]")
