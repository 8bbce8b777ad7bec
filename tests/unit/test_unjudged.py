"""unjudged@k (per case and per slice) and the unjudged card that took a lost gold card's place,
through the real scoring and comparison path; expected values worked by hand."""

from __future__ import annotations

import pytest

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.scoring import unjudged_at

KS = (1, 3, 5)


# unjudged@k = 1 − Judged@k, Judged@k as ir_measures: judged cards in the first k places over k —
# an empty place of a ranking shorter than k holds no judged card
@pytest.mark.parametrize("ranked,judged,expected", [
    (("a", "x", "b", "y"), {"a", "b"}, {"unjudged@1": 0.0, "unjudged@2": 0.5, "unjudged@4": 0.5, "unjudged@10": 0.8}),
    ((), {"a"}, {"unjudged@1": 1.0, "unjudged@2": 1.0, "unjudged@4": 1.0, "unjudged@10": 1.0}),
    (("x",), {"a"}, {"unjudged@1": 1.0, "unjudged@2": 1.0, "unjudged@4": 1.0, "unjudged@10": 1.0}),
    (("a", "x"), {"a"}, {"unjudged@1": 0.0, "unjudged@2": 0.5, "unjudged@4": 0.75, "unjudged@10": 0.9}),
])
def test_unjudged_at_by_hand(ranked, judged, expected):
    assert unjudged_at(ranked, judged, (1, 2, 4, 10)) == expected


CASES = (
    # graded: c0 is judged non-relevant, so it is not unjudged
    Case(id="g", query="q", gold={"a": 2, "c0": 0}, locale="en"),
    Case(id="l", query="q", gold=["b"], locale="pt-BR"),
    Case(id="none", query="q", gold=[]),  # no-answer: no unjudged figure
)


def results_for(rankings: dict[str, tuple[str, ...]]):
    return assemble_results(case_set=CaseSet(CASES, "cases.jsonl", "0", "jsonl"),
                            rankings={k: RankedList(ids=v) for k, v in rankings.items()},
                            metrics=metric_specs(KS), ks=KS)


def test_unjudged_per_case_and_per_slice():
    results = results_for({"g": ("c0", "x", "a", "y", "z"), "l": ("b", "w"), "none": ("a",)})
    by_id = {c.id: c for c in results.cases}
    assert by_id["g"].unjudged == {"unjudged@1": 0.0, "unjudged@3": 1 / 3, "unjudged@5": 3 / 5}
    assert by_id["l"].unjudged == {"unjudged@1": 0.0, "unjudged@3": 2 / 3, "unjudged@5": 4 / 5}
    assert by_id["none"].unjudged == {}
    overall = results.unjudged["overall"]["unjudged@5"]
    assert (overall.n, overall.value) == (2, pytest.approx((3 / 5 + 4 / 5) / 2))
    assert results.unjudged["locale=en"]["unjudged@5"].value == pytest.approx(3 / 5)


@pytest.mark.parametrize("now,expected", [
    (("x", "a"), "x"),     # the gold card was at rank 1 (MRR 1); x is at rank 1 now and unjudged
    (("c0", "x"), None),   # the card in its place is judged (grade 0): not "possibly relevant"
])
def test_a_lost_hit_names_the_unjudged_card_in_the_gold_cards_place(now, expected):
    ks = (1,)
    case_set = CaseSet(CASES[:1], "cases.jsonl", "0", "jsonl")
    before = assemble_results(case_set=case_set, rankings={"g": RankedList(ids=("a", "x"))},
                              metrics=metric_specs(ks), ks=ks)
    after = assemble_results(case_set=case_set, rankings={"g": RankedList(ids=now)}, metrics=metric_specs(ks), ks=ks)
    baseline = update_baseline(baseline=None, results=before, sha="s", ref="main", timestamp="t")
    comparison = compare(results=after, baseline=baseline, gate=GateSettings(), judgements="pooled")
    [lost] = comparison.lost_hits
    assert lost.possibly_relevant == expected
    # judged complete, every card outside the gold is not relevant: none is "possibly relevant"
    [lost] = compare(results=after, baseline=baseline, gate=GateSettings(), judgements="complete").lost_hits
    assert lost.possibly_relevant is None
