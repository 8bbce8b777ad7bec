"""The CLI and the action refuse the same input with the same words: each check that guards a
comparison or an eval lives once, in the core the two share (``compare.gate_slices.check_comparable``,
``load.runs.check_run_matches``, ``evaluation.run.one_retriever_problem``), and is reached from
``retrieval-gate compare`` / ``eval`` and from the action's flows alike. The action runs in
process against the fake GitHub API over HTTP; the CLI in the same workspace."""

from __future__ import annotations

import json
import re

import pytest

from retrieval_gate.artifacts.run_files import results_text
from retrieval_gate.publish.engine import RealEngine
from retrieval_gate.settings import SuiteConfig
from tests.e2e.action_harness import ActionWorld
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.helpers import run_cli

BASELINE = "baselines/default.json"
ALL_HITS = {f"q{i}": 1.0 for i in range(10)}


def _moved(results):
    """Results whose k lost the baseline's headline 5, so the headline moved to 10 by default."""
    return results.model_copy(update={"k": [10], "headline_k": 10})


class _MovedHeadlineEngine(FakeEngine):
    def evaluate(self, *, suite_config, suite):
        return _moved(super().evaluate(suite_config=suite_config, suite=suite))


@pytest.fixture
def engine() -> FakeEngine:
    return _MovedHeadlineEngine(scores=dict(ALL_HITS))


def _error(stderr: str) -> str:
    """The one error line main printed."""
    (line,) = [line for line in stderr.splitlines() if line.startswith("error: ")]
    return line


def _pr(world: ActionWorld, base: str):
    return world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base), ref="refs/pull/7/merge",
                     sha="c" * 40, inputs={"audit": "false"})


def test_a_headline_k_that_moved_is_refused_by_compare_and_by_the_action_in_the_same_words(world, github, engine,
                                                                                             capsys):
    base = github.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)}, message="base")
    run = _pr(world, base)
    assert run.exit_code == 2 and github.comments.get(7, []) == []  # nothing judged, nothing posted
    action_error = _error(run.stderr)
    assert "the headline k moved from 5 (the baseline's) to 10 because k [10] no longer measures 5" in action_error

    results = FakeEngine(scores=dict(ALL_HITS)).evaluate(suite_config=SuiteConfig(), suite="default")
    (world.workspace / "results.json").write_text(results_text(_moved(results)), encoding="utf-8")
    (world.workspace / "baseline.json").write_text(baseline_text(scores=ALL_HITS, sha="b" * 40), encoding="utf-8")
    code, _out, err = run_cli(["compare", "--results", "results.json", "--baseline", "baseline.json"], capsys)
    assert code == 2 and _error(err) == action_error


def _run_file_workspace(world: ActionWorld, *, retriever: str) -> None:
    ws = world.workspace
    (ws / "kb.jsonl").write_text("".join(json.dumps({"id": f"card{i}", "text": f"text {i}"}) + "\n"
                                         for i in range(3)), encoding="utf-8")
    (ws / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "query": f"query {i}", "gold": [f"card{i}"]})
                                            + "\n" for i in range(3)), encoding="utf-8")
    (ws / "run.jsonl").write_text("".join(json.dumps({"id": f"other{i}", "retrieved": [f"card{i}"]}) + "\n"
                                          for i in range(3)), encoding="utf-8")  # a run of other queries
    (ws / "retrieval-gate.yml").write_text(
        f"suites:\n  default:\n    kb: kb.jsonl\n    cases: cases.jsonl\n    k: [1]\n    retriever: {retriever}\n",
        encoding="utf-8")


def test_a_run_file_that_matches_no_case_is_refused_by_eval_and_by_the_action_in_the_same_words(world, capsys):
    world.engine = RealEngine(log=lambda line: None)  # the real eval: a run file needs no model
    _run_file_workspace(world, retriever="run:run.jsonl")
    run = world.run(event_name="push", event=world.push_event(ref="refs/heads/feature"), ref="refs/heads/feature")
    assert run.exit_code == 2
    action_error = _error(run.stderr)
    assert re.fullmatch(r"error: run\.jsonl: none of the 3 cases of cases\.jsonl is in the run: its ids \('other0', "
                        r"'other1'\) do not match the cases' ids \('c0', 'c1'\); .*", action_error), action_error

    code, _out, err = run_cli(["eval", "--out", "out.json"], capsys)  # the same workspace, the same config
    assert code == 2 and _error(err) == action_error
    code, _out, err = run_cli(["score", "--run", "run.jsonl", "--cases", "cases.jsonl", "--out", "s.json"], capsys)
    assert code == 2 and _error(err) == action_error


def test_a_suite_with_two_retrievers_gets_a_users_message_from_the_action(world, capsys):
    """`eval` measures both side by side; a gate judges one: the action says so, and how to split it."""
    world.engine = RealEngine(log=lambda line: None)
    _run_file_workspace(world, retriever="'bm25,run:run.jsonl'")
    (world.workspace / "run.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "retrieved": [f"card{i}"]}) + "\n"
                                                       for i in range(3)), encoding="utf-8")
    run = world.run(event_name="push", event=world.push_event(ref="refs/heads/feature"), ref="refs/heads/feature")
    assert run.exit_code == 2 and "run_evals" not in run.stderr
    assert _error(run.stderr) == (
        "error: suite 'default' names 2 retrievers (bm25, run:run.jsonl); a gate judges one retriever against one "
        "baseline: give each retriever its own suite in the config file (suites.<name>.retriever) and gate each "
        "suite, or compare them side by side with `retrieval-gate eval --suite default --out out/results.json`")
    code, _out, err = run_cli(["eval", "--suite", "default", "--out", "out/results.json"], capsys)  # as printed
    assert code == 0, err
    assert (world.workspace / "out" / "results.side_by_side.json").is_file()
