"""On a pooled golden set the gate asks for labels only where some labelling of the unjudged cards
changes its decision (``compare.decisive``); ids that are not cards are read as not relevant and
never asked for; a baseline scored with older labels is rescored from its stored rankings. Every
expected verdict is worked by hand from the exact one-sided sign test: P(X ≥ l | n = l + g, ½)."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from retrieval_gate.artifacts.label_sidecar import golden_judgements
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare, decision_of
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.load.cases import load_cases
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.kb_manifest import KbCard

GATE = GateSettings(fail_on_regression=True)


def p_lost(lost: int, gained: int) -> float:
    n = lost + gained
    return sum(comb(n, i) for i in range(lost, n + 1)) / 2 ** n


def results_for(cases, rankings, *, sha="0", not_relevant=None, kb=None):
    results = assemble_results(case_set=CaseSet(tuple(cases), "cases.jsonl", sha, "jsonl"),
                               rankings={k: RankedList(ids=tuple(v)) for k, v in rankings.items()},
                               metrics=metric_specs((1, 3)), ks=(1, 3), headline_k=1, not_relevant=not_relevant)
    if kb is not None:
        results = results.model_copy(update={"kb_cards": {c: KbCard(sha="1", title=c) for c in kb}})
    return results


def baseline_of(results):
    return update_baseline(baseline=None, results=results, sha="b", ref="main", timestamp="2026-01-01T00:00:00Z")


def cases(n):
    return [Case(id=f"q{i:02d}", query=f"question {i}", gold=[f"g{i}"]) for i in range(n)]


def test_the_sign_test_figures_used_here():
    assert p_lost(10, 0) == 1 / 1024 and p_lost(10, 2) == pytest.approx(79 / 4096)  # both < 0.05
    assert p_lost(8, 2) == pytest.approx(56 / 1024)  # > 0.05


def test_losses_no_labelling_can_undo_are_decided_without_asking():
    # 12 cases. q00-q09: the PR puts u_i, judged not relevant, above the gold card: 10 losses
    # whatever the labels. q10, q11: both sides miss (no gold card ranked); the PR's top 1 is an
    # unjudged card v_i. For the PR: 10 lost, 2 gained, p = 79/4096 < 0.05: fail. Against: 10
    # lost, 0 gained: fail. Decided: fail, and nothing is asked for.
    cs = cases(12)
    before = results_for(cs, {**{f"q{i:02d}": [f"g{i}", "z"] for i in range(10)},
                              **{f"q{i}": ["z", "y"] for i in (10, 11)}})
    sidecar = {f"q{i:02d}": {f"u{i}"} for i in range(10)}
    now = results_for(cs, {**{f"q{i:02d}": [f"u{i}", f"g{i}"] for i in range(10)},
                           **{f"q{i}": [f"v{i}", "z"] for i in (10, 11)}}, not_relevant=sidecar)
    comparison = compare(results=now, baseline=baseline_of(before), gate=GATE, resamples=1000, judgements="pooled")
    assert comparison.verdict == "fail" and comparison.needs_labels is None
    decision = decision_of(results=now, baseline=baseline_of(before), gate=GATE, resamples=1000)
    assert decision is not None and (decision.best, decision.worst, decision.cards) == ("fail", "fail", [])


def test_only_the_cards_that_can_flip_a_case_are_counted_heaviest_first():
    # 15 cases, k = 1 judged (headline), rankings kept 3 deep.
    # q00-q09: baseline [g, z]; the PR [u_i, g]: a loss unless u_i answers (then a tie).
    # q10-q13: baseline and PR both [g, w]: a hit on both sides by the gold card: fixed, never asked.
    # q14: both miss: baseline [z, y], the PR [v, z]: v relevant makes a gain; z relevant a hit on
    #      both (z is in both tops 3 but only the baseline's top 1) — so v and z both decide.
    # For the PR (u_i, v relevant): 0 lost, 1 gained: pass. Against (z relevant): 10 lost, 0
    # gained, p = 1/1024: fail. Decisive: the 10 u_i, v and z = 12 cards in 11 cases; the 4 w's
    # (judged nowhere, ranked 2nd on both sides, outside the judged top 1) are not.
    cs = cases(15)
    before = results_for(cs, {**{f"q{i:02d}": [f"g{i}", "z"] for i in range(10)},
                              **{f"q{i}": [f"g{i}", "w"] for i in range(10, 14)}, "q14": ["z", "y"]})
    now = results_for(cs, {**{f"q{i:02d}": [f"u{i}", f"g{i}"] for i in range(10)},
                           **{f"q{i}": [f"g{i}", "w"] for i in range(10, 14)}, "q14": ["v", "z"]})
    baseline = baseline_of(before)
    comparison = compare(results=now, baseline=baseline, gate=GATE, resamples=1000, judgements="pooled")
    assert comparison.verdict == "needs-labels"
    assert comparison.needs_labels.model_dump() == {"cards": 12, "cases": 11, "sitting": 7, "if_relevant": "pass",
                                                    "if_not_relevant": "fail"}
    decision = decision_of(results=now, baseline=baseline, gate=GATE, resamples=1000)
    asked = [(c.case, c.card) for c in decision.cards]
    assert set(asked) == {(f"q{i:02d}", f"u{i}") for i in range(10)} | {("q14", "v"), ("q14", "z")}
    # weights: a card one side ranks 1st and the other not in its top 1: |1/log2(2) − 0| = 1 —
    # all 12 here; ties go by the PR's rank (z is only the baseline's: last), then the case id
    assert all(c.weight == 1.0 for c in decision.cards)
    assert asked[-1] == ("q14", "z") and asked[:10] == [(f"q{i:02d}", f"u{i}") for i in range(10)]
    # the first sitting: the standard reading fails; the PR's side threatens it (its u_i and v).
    # With c of the lost cases confirmed (u_i not relevant) and v still possibly a gain: c lost,
    # 1 gained, p = P(X ≥ c | c + 1) = (c + 2) / 2^(c + 1): 8/128 = 0.0625 at c = 6, 9/256 = 0.035
    # at c = 7 — seven cards (u0 … u6), found not relevant, settle the verdict
    assert decision.sitting == 7 and p_lost(7, 1) < 0.05 <= p_lost(6, 1)
    assert comparison.needs_labels.sitting == 7
    # read as complete, the same runs: 10 lost, 0 gained, p = 1/1024: fail, nothing asked
    complete = compare(results=now, baseline=baseline, gate=GATE, resamples=1000, judgements="complete")
    assert complete.verdict == "fail" and complete.needs_labels is None


def test_a_card_the_pr_ranks_higher_weighs_more_than_one_it_ranks_lower():
    # k = 3 judged (a floor on hit@3 names it). q0: the PR ranks unjudged a 1st, the baseline does
    # not rank it: weight 1. q1: the PR ranks b 3rd: 1/log2(4) = 0.5. Both cases miss on both sides.
    cs = cases(2)
    before = results_for(cs, {"q00": ["x", "y", "z"], "q01": ["x", "y", "z"]},
                         not_relevant={"q00": {"x", "y", "z"}, "q01": {"x", "y", "z"}})
    now = results_for(cs, {"q00": ["a", "x", "y"], "q01": ["x", "y", "b"]},
                      not_relevant={"q00": {"x", "y", "z"}, "q01": {"x", "y", "z"}})
    gate = GateSettings(floors={"hit@3": 0.5})  # for the PR: 1.0 ≥ 0.5, pass; against: 0.0, fail
    decision = decision_of(results=now, baseline=baseline_of(before), gate=gate, resamples=1000)
    assert [(c.case, c.card, c.weight) for c in decision.cards] == [("q00", "a", 1.0), ("q01", "b", 0.5)]


def test_ids_that_are_not_cards_are_named_read_as_not_relevant_and_never_asked_for():
    # A run file whose top 1 is "http:1", no card of the KB, in every case, above the gold card:
    # it cannot be labelled, so it is not relevant: 10 lost, 0 gained, p = 1/1024: fail — no
    # needs-labels deadlock, and no unjudged card counted.
    cs = cases(10)
    kb = [f"g{i}" for i in range(10)] + ["z"]
    before = results_for(cs, {f"q{i:02d}": [f"g{i}", "z"] for i in range(10)}, kb=kb)
    now = results_for(cs, {f"q{i:02d}": ["http:1", f"g{i}"] for i in range(10)}, kb=kb)
    comparison = compare(results=now, baseline=baseline_of(before), gate=GATE, resamples=1000, judgements="pooled")
    assert comparison.verdict == "fail" and comparison.needs_labels is None
    assert comparison.not_cards == ["http:1"] and comparison.unjudged_top_k == 0
    from io import StringIO

    from rich.console import Console

    from retrieval_gate.render.terminal import print_comparison

    buffer = StringIO()
    print_comparison(comparison, console=Console(file=buffer, width=200))
    assert ("not cards: 1 ranked id(s) name no card of the KB (http:1): read as not relevant, never asked for"
            in buffer.getvalue())


def test_a_baseline_scored_with_older_labels_is_rescored_from_its_stored_rankings():
    # q00: the baseline ranked [b, a] when the gold was [a]: hit@1 0. Since, b was labelled
    # relevant too (gold [a, b]). The PR ranks the same [b, a]. Read with the old scores it is a
    # gained hit; rescored with the current labels both are hits: nothing changed.
    old_cases = [Case(id="q00", query="q", gold=["a"]), Case(id="q01", query="q", gold=["c"])]
    new_cases = [Case(id="q00", query="q", gold=["a", "b"]), Case(id="q01", query="q", gold=["c"])]
    before = results_for(old_cases, {"q00": ["b", "a"], "q01": ["c"]}, sha="old")
    now = results_for(new_cases, {"q00": ["b", "a"], "q01": ["c"]}, sha="new")
    baseline = baseline_of(before)
    assert baseline.cases["q00"].scores["hit@1"] == 0.0
    comparison = compare(results=now, baseline=baseline, gate=GateSettings(), resamples=1000)
    assert comparison.rescored_cases == 1 and comparison.gained_hits == [] and comparison.lost_hits == []
    row = next(r for r in comparison.rows if r.metric == "hit@1" and r.slice == "overall")
    assert row.delta == 0 and row.status == "unchanged"
    # the same golden set on both sides: nothing rescored
    same = compare(results=results_for(old_cases, {"q00": ["b", "a"], "q01": ["c"]}, sha="old"),
                   baseline=baseline, gate=GateSettings(), resamples=1000)
    assert same.rescored_cases == 0


def test_a_golden_set_is_pooled_where_it_carries_pool_provenance(tmp_path: Path):
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"id": "q", "query": "q?", "gold": ["a"]}) + "\n", encoding="utf-8")
    assert golden_judgements(load_cases(plain)) == "complete"
    # a case written by `label apply` from a draft names the pool's systems in its source
    drafted = tmp_path / "drafted.jsonl"
    drafted.write_text(json.dumps({"id": "q", "query": "q?", "gold": ["a"], "source": {
        "log": "log.csv", "count": 1, "pool_depth": 10, "pool_systems": ["bm25", "dense"], "labeller": "",
        "date": "2026-01-01"}}) + "\n", encoding="utf-8")
    assert load_cases(drafted).pooled and golden_judgements(load_cases(drafted)) == "pooled"
    # the "not relevant" sidecar beside it
    (tmp_path / "plain.not-relevant.jsonl").write_text(
        json.dumps({"case": "q", "card": "b", "sha": "0", "at": ""}) + "\n", encoding="utf-8")
    assert golden_judgements(load_cases(plain)) == "pooled"
