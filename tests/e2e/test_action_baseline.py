"""The action on push events and baseline refreshes, end to end against the fake GitHub API:
the baseline is written to the evaluated branch through the contents API, with the blob sha and
``[skip ci]``; concurrent writers are merged, never lost."""

from __future__ import annotations

import json

import pytest

from tests.e2e.action_harness import ActionWorld
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_github import FakeGitHub, blob_sha

BASELINE = "baselines/default.json"
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


def test_first_push_to_the_default_branch_creates_the_baseline(world, github):
    run = _push(world)
    assert run.exit_code == 0 and run.outputs["mode"] == "update-baseline"
    (put,) = github.requests("PUT", f"/contents/{BASELINE}$")
    assert "sha" not in put.body and put.body["branch"] == "main"  # a create: no blob sha
    assert put.body["message"] == f"retrieval-gate: update {BASELINE} for {OURS[:12]} [skip ci]"
    assert _history(github) == [OURS]
    # the baseline's commit, then the audit's beside it (two contents-API writes) — the branch's head
    assert github.file_at(run.outputs["baseline_commit"], BASELINE) == github.file_at("main", BASELINE)
    assert run.outputs["audit_commit"] == github.branches["main"]
    assert run.outputs["verdict"] == "no-baseline"
    local = (world.workspace / run.outputs["baseline_file"]).read_text(encoding="utf-8")
    assert local == github.file_at("main", BASELINE)
    assert f"Baseline `{BASELINE}` updated on `main`" in run.summary


def test_push_updates_the_baseline_with_the_blob_sha_and_keeps_history(world, github, engine):
    old = baseline_text(engine, scores={f"q{i}": 1.0 for i in range(10)}, sha=THEIRS, history=3)
    github.commit("main", {BASELINE: old}, message="older baseline")
    run = _push(world)
    assert run.exit_code == 0
    (put,) = github.requests("PUT", f"/contents/{BASELINE}$")
    assert put.body["sha"] == blob_sha(old.encode())
    assert _history(github) == [f"{0:040x}", f"{1:040x}", THEIRS, OURS]
    assert run.outputs["verdict"] == "pass" and run.outputs["delta_hit_at_k"] == "0.0000"


def test_concurrent_merge_409_rereads_merges_and_both_history_entries_survive(world, github, engine):
    github.commit("main", {BASELINE: baseline_text(engine, scores={"q0": 1.0}, sha="0" * 40)}, message="base")

    def another_merge_writes_first() -> None:
        github.commit("main", {BASELINE: baseline_text(engine, scores={"q0": 1.0}, sha=THEIRS, history=2)},
                      message="their baseline [skip ci]")

    github.before("PUT", f"/contents/{BASELINE}$", another_merge_writes_first)
    run = _push(world)

    assert run.exit_code == 0
    assert [r.status for r in github.requests("PUT", f"/contents/{BASELINE}$")] == [409, 200]
    puts = github.requests("PUT", f"/contents/{BASELINE}$")
    assert puts[0].body["sha"] != puts[1].body["sha"]  # the retry used the new blob sha
    assert _history(github) == [f"{0:040x}", THEIRS, OURS]  # theirs kept, ours added: no lost update
    assert "after 2 attempts (concurrent writers)" in run.summary
    assert "re-reading baselines/default.json and merging again" in run.stdout


def test_two_first_merges_racing_to_create_the_baseline_422_then_update(world, github, engine):
    def another_merge_creates_it_first() -> None:
        github.commit("main", {BASELINE: baseline_text(engine, scores={"q0": 1.0}, sha=THEIRS)}, message="theirs")

    github.before("PUT", f"/contents/{BASELINE}$", another_merge_creates_it_first)
    run = _push(world)
    assert run.exit_code == 0
    first, second = github.requests("PUT", f"/contents/{BASELINE}$")
    assert (first.status, "sha" in first.body) == (422, False)  # a create, refused: the file exists now
    assert (second.status, "sha" in second.body) == (200, True)  # an update with the new blob sha
    assert _history(github) == [THEIRS, OURS]


def test_a_conflict_while_the_file_does_not_change_is_not_retried_forever(world, github):
    """E.g. a protected branch: GitHub keeps refusing; the file never moves."""
    github.fail("PUT", f"/contents/{BASELINE}$", status=409, body={"message": "Repository rule violations found"},
                times=10)
    run = _push(world)
    assert run.exit_code == 2
    assert len(github.requests("PUT", f"/contents/{BASELINE}$")) == 2
    assert "Repository rule violations found" in run.stderr and "protected" in run.stderr
    assert github.file_at("main", BASELINE) is None


def test_push_to_another_branch_is_eval_and_summary_only(world, github):
    run = _push(world, ref="refs/heads/feature")
    assert run.exit_code == 0 and run.outputs["mode"] == "report"
    assert github.log == []  # no API call at all
    assert run.outputs["verdict"] == "none" and run.outputs["hit_at_k"] == "1.0000"
    assert run.summary.startswith("## summary")
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
    assert github.requests("PUT") == [] and engine.calls == []


def test_update_baseline_on_a_tag_is_a_usage_error(world, github):
    run = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/tags/v1"),
                    ref="refs/tags/v1", sha=OURS, inputs={"mode": "update-baseline"})
    assert run.exit_code == 2 and "refs/heads/<branch>" in run.stderr
    assert github.requests("PUT") == []


def test_large_baseline_is_read_through_the_blob_api(world, github, engine):
    old = baseline_text(engine, scores={f"q{i}": 1.0 for i in range(10)}, sha=THEIRS)
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
