"""Drawing a golden set from a log (golden/draw.py) and two labellers (golden/agreement.py): sizes from
the power formula, allocation by traffic worked by hand, near-duplicates, the pool's union and
order, Cohen's kappa against a hand-worked example."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.audit.coverage import best_case_mde, required_n
from retrieval_gate.golden import draw as core
from retrieval_gate.golden.agreement import agreement, judged, kappa, reconcile
from retrieval_gate.golden.decisions import Decision, NoAnswer
from retrieval_gate.golden.log_clean import LogQuery
from retrieval_gate.stats.power import min_changed


def _q(text: str, count: int, line: int = 1, **fields: str) -> LogQuery:
    return LogQuery(text=text, count=count, fields=fields, lines=1, first_line=line)


def test_the_size_is_the_power_formulas_and_the_minimum_the_sign_tests():
    needed = core.cases_for(0.05)
    assert needed == required_n(0.05)
    assert best_case_mde(needed) <= 0.05 < best_case_mde(needed - 1)  # the smallest n that sees the drop
    assert core.min_per_intent() == min_changed(0.05) == 6  # (½)^5·2 = 1/16 > 0.05, (½)^6·2 = 1/32 < 0.05


def test_allocation_by_traffic_with_largest_remainder_minimum_and_existing_cases():
    intents = [core.Intent("a", "", 700, 100), core.Intent("b", "", 200, 100), core.Intent("c", "", 100, 3)]
    # 40 cases: 28, 8, 4 by traffic; b already holds 5 cases; c has 3 queries only, so the 1 of its
    # share it cannot supply is shared again by traffic between a and b: 7/9 and 2/9 → a
    assert core.allocate(intents, total=40, existing={"b": 5}, minimum=6) == {"a": 29, "b": 3, "c": 3}
    # 10 cases: 7, 2, 1 → the minimum 6 lifts b and c
    assert core.allocate(intents, total=10, existing={}, minimum=6) == {"a": 7, "b": 6, "c": 3}
    # 11 cases: 7.7, 2.2, 1.1 → floors 7, 2, 1 and the one left to a's remainder .7
    assert core.allocate(intents, total=11, existing={}, minimum=1) == {"a": 8, "b": 2, "c": 1}
    assert core.allocate(intents, total=0, existing={}, minimum=1, per_intent=50) == {"a": 50, "b": 50, "c": 3}



def test_a_share_an_intent_cannot_supply_goes_to_the_intents_that_still_have_queries():
    # 100 cases: 70, 20, 10 by traffic; b has 12 queries, c 4: b's 8 and c's 6 left over (14) go to a
    # (the only intent with queries left) until a too runs out at 80
    intents = [core.Intent("a", "", 700, 80), core.Intent("b", "", 200, 12), core.Intent("c", "", 100, 4)]
    assert core.allocate(intents, total=100, existing={}, minimum=1) == {"a": 80, "b": 12, "c": 4}
    # with room everywhere but c: c's 6 left over are shared 7 : 2 → 4.67, 1.33 → 5 and 1
    roomy = [core.Intent("a", "", 700, 500), core.Intent("b", "", 200, 500), core.Intent("c", "", 100, 4)]
    assert core.allocate(roomy, total=100, existing={}, minimum=1) == {"a": 75, "b": 21, "c": 4}


def test_near_duplicates_collapse_into_the_most_frequent_wording():
    queries = [_q("reset my password", 2, 1), _q("how to reset password", 9, 2), _q("refund", 1, 3)]
    v = np.array([[1.0, 0.0], [0.96, 0.28], [0.0, 1.0]], dtype=np.float32)  # cos(0, 1) = 0.96
    leaders, vectors, merged = core.collapse_near(queries, vectors=v, threshold=0.95)
    assert [(q.text, q.count, q.lines) for q in leaders] == [("how to reset password", 11, 2), ("refund", 1, 1)]
    assert merged == 1 and vectors.shape == (2, 2)
    assert len(core.collapse_near(queries, vectors=v, threshold=0.97)[0]) == 3


def test_the_draw_is_seeded_weighted_and_respects_the_quota_and_exclusions():
    queries = [_q(f"q{i}", 1 + (i == 0) * 1000) for i in range(20)]
    labels = ["x"] * 10 + ["y"] * 10
    first = core.draw(queries, labels=labels, quota={"x": 3, "y": 2}, seed=7)
    assert first == core.draw(queries, labels=labels, quota={"x": 3, "y": 2}, seed=7)
    assert 0 in first and len(first) == 5 and sum(labels[i] == "x" for i in first) == 3
    excluded = [i == 0 for i in range(20)]
    assert 0 not in core.draw(queries, labels=labels, quota={"x": 3, "y": 2}, seed=7, excluded=excluded)


def test_the_presample_keeps_the_heavy_queries_and_is_seeded():
    queries = [_q(f"q{i}", 10_000 if i < 5 else 1, i) for i in range(1000)]
    sample = core.presample(queries, limit=50, seed=1)
    assert len(sample) == 50 and all(q in sample for q in queries[:5])
    assert sample == core.presample(queries, limit=50, seed=1)
    assert core.presample(queries[:10], limit=50, seed=1) == queries[:10]


def test_the_pool_is_the_union_of_the_tops_and_its_order_names_no_system():
    order, found = core.pool({"dense": ["a", "b", "c"], "bm25": ["c", "d", "e"]}, depth=2, case="q1", seed=0)
    assert sorted(order) == ["a", "b", "c", "d"] and found == {
        "a": ["dense"],
        "b": ["dense"],
        "c": ["bm25"],
        "d": ["bm25"],
    }
    renamed, _ = core.pool({"zz": ["a", "b"], "aa": ["c", "d"]}, depth=2, case="q1", seed=0)
    assert renamed == order  # the order depends on the case and the cards only


def test_intents_come_from_the_log_column_or_from_clusters():
    queries = [
        _q("refund card", 5, intent="billing"),
        _q("reset password", 3, intent="account"),
        _q("card refund late", 4),
    ]
    labels, intents = core.cluster_intents(queries, vectors=np.eye(3, dtype=np.float32), seed=0)
    assert labels == ["billing", "account", "(none)"]
    assert [(i.name, i.traffic) for i in intents] == [("billing", 5), ("(none)", 4), ("account", 3)]
    plain = [_q("refund card", 5), _q("card refund late", 4), _q("reset password", 3), _q("password reset link", 1)] * 2
    v = np.array([[1, 0], [0.99, 0.1], [0, 1], [0.1, 0.99]] * 2, dtype=np.float32)  # 8 queries: k = √(8/2) = 2
    labels, intents = core.cluster_intents(plain, vectors=v, seed=0)
    assert labels[0] == labels[1] != labels[2] == labels[3]
    assert {i.name: i.representative for i in intents}[labels[0]].startswith(("refund card", "card refund"))
    assert labels[0].split(" · ")[:2] == ["card", "refund"]


def test_portuguese_intents_are_named_by_their_own_words_not_function_words():
    """A Portuguese log (the design documents' language): the names were "de · em · qual"."""
    billing = ["como cancelar a minha assinatura", "como cancelar assinatura do plano",
               "quero cancelar a assinatura de hoje", "cancelar assinatura como faço"]
    refunds = ["qual o prazo de reembolso", "como pedir reembolso de uma compra", "qual prazo do reembolso",
               "reembolso de pagamento como funciona"]
    names = core.intent_names([[_q(t, 1) for t in billing], [_q(t, 1) for t in refunds]])
    assert names[0][:2] == ["assinatura", "cancelar"] and names[1][0] == "reembolso"
    assert not {w for n in names for w in n} & {"como", "de", "do", "qual", "em", "minha", "uma"}


def test_a_word_every_intent_uses_weighs_less_than_one_that_sets_an_intent_apart():
    # hand-worked: tf(invoice) = 3 in both, f = 6; tf(refund) = 2, f = 2; A = (3 + 2 + 1) = 6 per cluster
    # refund: 2 · log(1 + 6/2) = 2.77 > invoice: 3 · log(1 + 6/6) = 2.08
    a = [_q("invoice refund", 1), _q("invoice refund late", 1), _q("invoice", 1)]
    b = [_q("invoice export", 1), _q("invoice export csv", 1), _q("invoice", 1)]
    names = core.intent_names([a, b])
    assert names == [["refund", "invoice", "late"], ["export", "invoice", "csv"]]


def test_cohens_kappa_matches_a_hand_worked_example():
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]
    # observed 7/10; expected 0.6·0.5 + 0.4·0.5 = 0.5; κ = (0.7 − 0.5) / (1 − 0.5) = 0.4
    assert kappa(a, b) == pytest.approx(0.4)
    assert kappa([1, 1], [1, 1]) == 1.0 and kappa([], []) is None


def _d(case: str, card: str, grade: int) -> Decision:
    return Decision(case=case, card=card, grade=grade, sha="s")


def test_two_labellers_agree_disagree_and_a_third_or_a_preference_settles_it():
    a = judged([(1, _d("q1", "x", 1)), (2, _d("q1", "y", 0)), (3, _d("q2", "z", 1))])
    b = judged([(1, _d("q1", "x", 1)), (2, _d("q1", "y", 1)), (3, NoAnswer(case="q2", no_answer=True))])
    result = agreement(a, b=b, intent_of={"q1": "i1", "q2": "i2"})
    assert result.pairs == 3 and result.disagree == [("q1", "y", 0, 1), ("q2", "z", 1, 0)]
    # i1: A (1, 0), B (1, 1): observed ½, expected ½·1 + ½·0 = ½ → κ 0; i2: one pair, 1 vs 0 → κ 0
    assert result.by_intent == {"i1": (2, 0.0), "i2": (1, 0.0)}
    merged, conflicts = reconcile([a, b])
    assert [c[:2] for c in conflicts] == [("q1", "y"), ("q2", "z")]
    merged, conflicts = reconcile([a, b], prefer=1)
    assert not conflicts and {(r.case, getattr(r, "card", None), getattr(r, "grade", None)) for r in merged} == {
        ("q1", "x", 1),
        ("q1", "y", 1),
        ("q2", "z", 0),
        ("q2", None, None),
    }
    third = judged([(1, _d("q1", "y", 0)), (2, _d("q2", "z", 1))])
    merged, conflicts = reconcile([a, b, third])
    assert not conflicts and sorted((r.case, r.card, r.grade) for r in merged if isinstance(r, Decision)) == [
        ("q1", "x", 1),
        ("q1", "y", 0),
        ("q2", "z", 1),
    ]
    assert not any(isinstance(r, NoAnswer) for r in merged)  # q2 has a relevant card now


def test_the_pool_needs_two_different_retrievers_and_adds_the_suites_own():
    from retrieval_gate.errors import UsageError
    from retrieval_gate.golden.cases_draft import pool_specs
    from retrieval_gate.settings import SuiteConfig

    def names(items):
        return [(s.name, d) for s, d in items]

    assert names(pool_specs(SuiteConfig(), pool=None)) == [("dense", 10), ("bm25", 10)]
    assert names(pool_specs(SuiteConfig(retriever="hybrid"), pool=None, depth=20)) == [
        ("dense", 20), ("bm25", 20), ("hybrid", 20)]
    assert names(pool_specs(SuiteConfig(), pool="bm25,hybrid")) == [("bm25", 10), ("hybrid", 10)]
    for one in ("dense", "bm25,bm25", "bm25:10,bm25:20"):
        with pytest.raises(UsageError, match=r"at least two different retrievers|listed twice"):
            pool_specs(SuiteConfig(), pool=one)


def test_pool_takes_every_spec_the_suite_takes_each_with_its_own_depth():
    from retrieval_gate.errors import UsageError
    from retrieval_gate.golden.cases_draft import pool_specs
    from retrieval_gate.settings import SuiteConfig

    pooled = pool_specs(SuiteConfig(), depth=5, pool="dense:20, bm25:20,hybrid:10,hybrid+rerank,python:pkg.mod:fn:7,"
                                                      "http://127.0.0.1:8080,https://h:9/search:3,run:runs/r.tsv:4")
    assert [(s.name, d) for s, d in pooled] == [
        ("dense", 20), ("bm25", 20), ("hybrid", 10), ("hybrid+rerank", 5), ("python:pkg.mod:fn", 7),
        ("http://127.0.0.1:8080", 5), ("https://h:9/search", 3), ("run:runs/r.tsv", 4)]
    for bad in ("dense:0,bm25", "dense:1001,bm25", "nonsense:3,bm25"):
        with pytest.raises(UsageError):
            pool_specs(SuiteConfig(), pool=bad)


def test_typo_level_variants_collapse_into_the_more_frequent_wording_and_others_stay():
    from retrieval_gate.golden.draw import TYPO_COSINE, collapse_typos

    queries = [LogQuery(text="how do I change my billing address", count=5, fields={}, lines=5, first_line=1),
               LogQuery(text="how do I change my billing adress", count=1, fields={}, lines=1, first_line=2),
               LogQuery(text="how do i change my biling address", count=2, fields={}, lines=2, first_line=3),
               LogQuery(text="reset two-factor authentication", count=3, fields={}, lines=3, first_line=4),
               LogQuery(text="how do I change my shipping address", count=1, fields={}, lines=1, first_line=5)]
    vectors = np.eye(5, dtype=np.float32)
    leaders, kept, merged = collapse_typos(queries, vectors=vectors, threshold=TYPO_COSINE)
    assert [q.text for q in leaders] == ["how do I change my billing address", "reset two-factor authentication",
                                         "how do I change my shipping address"]  # another need: not merged
    assert [q.count for q in leaders] == [8, 3, 1] and [q.lines for q in leaders] == [8, 3, 1] and merged == 2
    assert (kept == vectors[[0, 3, 4]]).all()


def test_the_long_query_cut_says_what_it_dropped_and_hints_above_five_percent():
    from retrieval_gate.golden.cases_draft import long_lines
    from retrieval_gate.golden.log_clean import RawQuery, clean_log

    rows = [RawQuery(line=i, text=t, count=1, fields={}) for i, t in
            enumerate(["short one", "x " * 40, "X  " * 40, "y " * 40, *(f"query {n}" for n in range(20))], 1)]
    distinct, report = clean_log(rows, max_chars=50)
    assert report.too_long == 2 and report.dropped["over 50 characters"] == 3  # "x x …" twice, ignoring case
    lines = long_lines(report, distinct=len(distinct))
    assert lines[0] == "- long queries dropped (--max-chars 50): 2 distinct (3 lines), 8.7% of the distinct queries"
    assert lines[1].startswith("- hint: more than 5% of the distinct queries")
    distinct, report = clean_log(rows, max_chars=500)
    assert long_lines(report, distinct=len(distinct)) == [
        "- long queries dropped (--max-chars 500): 0 distinct (0 lines), 0.0% of the distinct queries"]
