"""baseline.update: a baseline from results, the bounded history, the fingerprint."""

from __future__ import annotations

import pytest

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.errors import BaselineError, UsageError
from tests.unit.compare_data import make_case, make_results


def results_with(hit: float, *, suite: str = "default"):
    return make_results([
        make_case("a", {"hit@5": hit, "recall@5": hit / 2, "ndcg@5": 0.123456789}, slices=["overall", "locale=pt-BR"]),
        make_case("b", {"hit@5": 1.0, "recall@5": 1.0, "ndcg@5": 1.0}),
        make_case("c", {}, status="no_gold", slices=["overall", "no-answer"]),
    ], suite=suite, config={"model": "m1", "retriever": "dense", "batch_size": 64, "store": {"path": "/tmp/x"}})


def test_a_new_baseline_takes_the_results_and_one_history_entry():
    baseline = update_baseline(baseline=None, results=results_with(0.0), sha="s1", ref="main", timestamp="t1")
    assert baseline.suite == "default"
    assert (baseline.sha, baseline.ref, baseline.updated_at) == ("s1", "main", "t1")
    assert baseline.cases["a"].scores == {"hit@5": 0.0, "recall@5": 0.0, "ndcg@5": 0.123457}
    assert baseline.cases["a"].slices == ["overall", "locale=pt-BR"]
    assert baseline.cases["c"].status == "no_gold" and baseline.cases["c"].scores == {}
    assert baseline.aggregates["overall"]["hit@5"].value == 0.5
    assert baseline.aggregates["overall"]["hit@5"].n == 2
    (entry,) = baseline.history
    assert entry.headline == {"hit@5": 0.5, "recall@5": 0.5, "ndcg@5": 0.561728}
    assert entry.n == 2
    assert (entry.sha, entry.ref, entry.timestamp) == ("s1", "main", "t1")


def test_the_fingerprint_holds_config_k_and_input_hashes_but_not_the_run_or_volatile_settings():
    baseline = update_baseline(baseline=None, results=results_with(1.0), sha=None, ref=None, timestamp=None)
    assert baseline.fingerprint == {
        "config": {"model": "m1", "retriever": "dense", "store": {}},
        "k": [5],
        "inputs": {"cases": "cases-1", "kb": "kb-1"},
        "relevance": {"graded": False, "level": 1, "mean": "relevant"},
    }


def test_history_is_appended_in_order_and_bounded():
    baseline = None
    for i in range(7):
        baseline = update_baseline(baseline=baseline, results=results_with(float(i % 2)), sha=f"s{i}", ref="main",
                                   timestamp=f"t{i}", history_limit=3)
    assert baseline is not None
    assert [e.sha for e in baseline.history] == ["s4", "s5", "s6"]
    assert [e.headline["hit@5"] for e in baseline.history] == [0.5, 1.0, 0.5]


def test_a_rerun_on_the_same_commit_replaces_its_entry():
    first = update_baseline(baseline=None, results=results_with(0.0), sha="s1", ref="main", timestamp="t1")
    second = update_baseline(baseline=first, results=results_with(1.0), sha="s2", ref="main", timestamp="t2")
    rerun = update_baseline(baseline=second, results=results_with(0.0), sha="s2", ref="main", timestamp="t3")
    assert [(e.sha, e.timestamp, e.headline["hit@5"]) for e in rerun.history] == [("s1", "t1", 0.5), ("s2", "t3", 0.5)]
    unknown = update_baseline(baseline=rerun, results=results_with(1.0), sha=None, ref=None, timestamp="t4")
    again = update_baseline(baseline=unknown, results=results_with(1.0), sha=None, ref=None, timestamp="t5")
    assert len(again.history) == 4  # without a sha every run is its own point


def test_a_baseline_of_another_suite_is_not_overwritten():
    other = update_baseline(baseline=None, results=results_with(1.0, suite="search"), sha=None, ref=None,
                            timestamp=None)
    with pytest.raises(BaselineError, match=r"suite 'search'.*suite 'default'"):
        update_baseline(baseline=other, results=results_with(1.0), sha=None, ref=None, timestamp=None)


def test_the_history_limit_must_be_positive():
    with pytest.raises(UsageError, match="history limit 0"):
        update_baseline(baseline=None, results=results_with(1.0), sha=None, ref=None, timestamp=None, history_limit=0)


def test_a_suite_of_measures_without_a_cutoff_keeps_them_as_its_history_headline():
    results = make_results([make_case("a", {"Rprec": 0.5}), make_case("b", {"Rprec": 0.25}),
                            make_case("c", {"Rprec": 1.0})], metrics=["Rprec"])
    assert list(results.metrics) == ["Rprec"]
    (entry,) = update_baseline(baseline=None, results=results, sha="s1", ref="main", timestamp="t1").history
    assert entry.headline == {"Rprec": round((0.5 + 0.25 + 1.0) / 3, 6)} and entry.n == 3
