"""Each audit check on small hand-built golden sets whose findings are worked out by hand."""

from __future__ import annotations

import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from retrieval_gate.audit import AuditParams, introduced, resolved, run_audit
from retrieval_gate.audit.coverage import best_case_mde, coverage_matrix, required_n
from retrieval_gate.audit.label_review import label_review, review_findings
from retrieval_gate.audit.model import AuditCard, Finding
from retrieval_gate.audit.unwinnable import unwinnable_findings
from retrieval_gate.models import Card, Case
from retrieval_gate.score.provenance import corpus_digest, labels_digest, queries_digest

REFUND = ("Refunds to a credit card take five to ten business days to appear on the customer's statement, "
          "depending on the bank that issued the card and on the time of day the refund was made.")
# the same card with two words changed: 3-word shingles 33 of 37 shared, Jaccard ≈ 0.8-0.9
REFUND_TWIN = REFUND.replace("five to ten", "five to twelve")
TAXES = ("Sales tax is charged according to the customer's billing address; exempt customers upload a "
         "certificate in the tax settings page before the next invoice is issued to them.")


def card(id: str, text: str, **meta) -> Card:
    return Card(id=id, text=text, metadata=meta)


def case(id: str, query: str, gold=(), **fields) -> Case:
    return Case(id=id, query=query, gold=tuple(gold), **fields)


def kinds(report) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    return [(f.kind, f.cases, f.cards) for f in report.findings if not f.kind.endswith("_cell")]


def audit(cases, cards, **params):
    return run_audit(cases=cases, entries=cards, params=AuditParams(**params))


def test_near_duplicate_cards_and_ambiguous_gold():
    cards = [card("refund", REFUND), card("refund-old", REFUND_TWIN), card("taxes", TAXES)]
    cases = [case("q1", "card refund timing", ["refund"]),  # twin not gold → ambiguous
             case("q2", "refund timing again", ["refund", "refund-old"]),  # both gold → fine
             case("q3", "sales tax", ["taxes"])]
    report = audit(cases, cards, threshold=0.7)
    assert kinds(report) == [
        ("ambiguous_gold", ("q1",), ("refund", "refund-old")),
        ("near_duplicate_cards", (), ("refund", "refund-old")),
    ]
    amb = report.findings[0]
    assert amb.severity == "high" and amb.data == {"gold": ["refund"], "twins": ["refund-old"]}
    cluster = next(f for f in report.findings if f.kind == "near_duplicate_cards")
    assert 0.7 <= cluster.data["jaccard_min"] <= 1.0


def test_distinct_cards_are_not_clustered():
    report = audit([case("q1", "sales tax", ["taxes"])], [card("refund", REFUND), card("taxes", TAXES)])
    assert report.counts["near_duplicate_clusters"] == 0


@pytest.mark.parametrize(("query", "gold", "expected"), [
    # verbatim, into its gold card: medium
    ("depending on the bank that issued the card", ["refund"], ("medium", 1.0)),
    # verbatim into a card that is not gold: low (an unlabelled answer?)
    ("depending on the bank that issued the card", ["taxes"], ("low", 1.0)),
    # 7 words, 5 three-word shingles: "twenty" breaks 2 of them (60 % < 90 %): no leak
    ("depending on the twenty that issued the card", ["refund"], None),
    # shorter than leak_min_words (6): never a leak
    ("the bank that issued", ["refund"], None),
])
def test_query_leakage(query, gold, expected):
    report = audit([case("q1", query, gold)], [card("refund", REFUND), card("taxes", TAXES)])
    leaks = [f for f in report.findings if f.kind == "query_leakage"]
    if expected is None:
        assert leaks == []
    else:
        severity, share = expected
        assert [(f.severity, f.cases, f.cards, f.data["containment"]) for f in leaks] == [
            (severity, ("q1",), ("refund",), share)]


def test_near_verbatim_leak_at_the_containment_threshold():
    # 13 words ("customer's" is two: customer, s) → 11 shingles; the changed last word breaks
    # one of them: 10/11 = 0.909 ≥ 0.9
    query = "take five to ten business days to appear on the customer's invoice"
    report = audit([case("q1", query, ["refund"])], [card("refund", REFUND)])
    leak = next(f for f in report.findings if f.kind == "query_leakage")
    assert leak.data["containment"] == round(10 / 11, 4) and "near-verbatim (91%" in leak.reason


def test_duplicate_near_duplicate_and_cross_split_queries():
    cards = [card("refund", REFUND), card("taxes", TAXES)]
    cases = [
        case("a", "How do I reset my password?", ["refund"]),
        case("b", "how do i reset my PASSWORD", ["refund"]),  # same after normalisation
        case("c", "Where can I download my invoices from last year", ["taxes"], tags={"split": "dev"}),
        case("d", "Where can I download my invoices from last years", ["taxes"], tags={"split": "heldout"}),
        case("e", "What is the refund window for annual plans", ["refund"]),
        case("f", "What is the refund window for annual plan?", ["refund"]),
    ]
    found = {f.kind: f.cases for f in audit(cases, cards).findings if "query" in f.kind}
    assert found == {"duplicate_query": ("a", "b"), "split_query_overlap": ("c", "d"),
                     "near_duplicate_query": ("e", "f")}


def test_splits_sharing_a_gold_group_through_a_near_duplicate():
    cards = [card("refund", REFUND), card("refund-old", REFUND_TWIN), card("taxes", TAXES)]
    cases = [case("d1", "refund timing", ["refund"], tags={"split": "dev"}),
             case("h1", "how long for money back", ["refund-old"], tags={"split": "heldout"}),
             case("h2", "sales tax exemption", ["taxes"], tags={"split": "heldout"})]
    shared = [f for f in audit(cases, cards, threshold=0.7).findings if f.kind == "split_shared_gold"]
    assert [(f.cases, f.cards, f.severity) for f in shared] == [(("d1", "h1"), ("refund", "refund-old"), "high")]
    assert shared[0].data["splits"] == {"dev": ["d1"], "heldout": ["h1"]}


def acard(id, text, chunks=1, **meta):
    return AuditCard(id=id, text=text, metadata=(meta,), chunks=chunks)


@pytest.mark.parametrize(("cards", "gold", "filter_", "expected"), [
    ({"a": acard("a", "  \n ")}, ["a"], None, [("empty_gold_card", ("a",), "high")]),
    ({"a": acard("a", "tiny")}, ["a"], None, [("short_gold_card", ("a",), "high")]),
    ({"a": acard("a", "long enough text here", chunks=0)}, ["a"], None,
     [("gold_card_without_chunks", ("a",), "high")]),
    ({"a": acard("a", "long enough text here", locale="en")}, ["a"], {"locale": "pt"},
     [("gold_filtered_out", ("a",), "high")]),
    # one of two gold cards unusable: the case can still be won → low
    ({"a": acard("a", ""), "b": acard("b", "long enough text here")}, ["a", "b"], None,
     [("empty_gold_card", ("a",), "low")]),
    ({"a": acard("a", "long enough text here", locale="en")}, ["a"], {"locale": "en"}, []),
])
def test_unwinnable_gold(cards, gold, filter_, expected):
    found = unwinnable_findings(cases=[case("q", "question", gold, filter=filter_)], cards=cards, min_chars=20)
    assert [(f.kind, f.cards, f.severity) for f in found] == expected


def test_mde_is_the_best_case_paired_sign_test_drop_by_hand():
    # Only lost cases change: M ~ Bin(n, δ) lost, and the two-sided exact sign test rejects at
    # 0.05 once M ≥ 6 (2·0.5^6 = 0.031 < 0.05 ≤ 2·0.5^5), so power(δ) = P(Bin(n, δ) ≥ 6).
    for n in (10, 30, 100, 300):
        expected = brentq(lambda d, n=n: binom.sf(5, n, d) - 0.8, 1e-9, 1 - 1e-9, xtol=1e-13)
        assert best_case_mde(n) == pytest.approx(expected, abs=1e-9)
    assert best_case_mde(5) == 1.0  # 5 of 5 lost: p = 0.0625, no drop is detectable
    needed = next(n for n in range(6, 10_000) if binom.sf(5, n, 0.1) >= 0.8)
    assert required_n(0.1) == needed
    assert best_case_mde(needed) <= 0.1 < best_case_mde(needed - 1)


def test_coverage_matrix_counts_empty_cells_and_power():
    cases = [case("1", "q", ["a"], locale="en-US"), case("2", "q", ["a"], locale="pt-BR"),
             case("3", "q", ["a"], locale="en-US", kind="adversarial"), case("4", "q", [], locale="en-US")]
    cards = {"a": acard("a", "text", doc_type="faq")}
    cov = coverage_matrix(cases=cases, cards=cards, fields=["kind", "locale", "gold.doc_type"], max_drop=0.5,
                          alpha=0.05, power=0.8, metric="hit@5", hits={"1": True, "2": False, "3": True})
    cells = {tuple(c.values.values()): (c.n, c.n_gold, c.hits) for c in cov.cells}
    assert cells == {("adversarial", "en-US", "faq"): (1, 1, 1), ("golden", "en-US", "(no gold)"): (1, 0, 0),
                     ("golden", "en-US", "faq"): (1, 1, 1), ("golden", "pt-BR", "faq"): (1, 1, 0)}
    # the cross product of observed values: 2 kinds × 2 locales × 2 doc types = 8, 4 observed
    assert len(cov.empty_cells) == 4
    assert {"kind": "adversarial", "locale": "pt-BR", "gold.doc_type": "faq"} in cov.empty_cells
    assert all(c.detectable is False for c in cov.cells if c.n_gold)  # n = 1 detects nothing


def test_label_review_queue_misses_first():
    cases = [case("hit", "q", ["A"]), case("miss", "q", ["A"]), case("clean", "q", ["A"]), case("nogold", "q")]
    retrieved = {"hit": ["X", "Y", "A"], "miss": ["X", "Z", "W"], "clean": ["A"], "nogold": ["X"]}
    review, items = label_review(cases=cases, retrieved=retrieved, k=3, limit=10)
    assert [(i.case, i.hit, i.unjudged, i.above_first_gold) for i in review.queue] == [
        ("miss", False, ["X", "Z", "W"], 3), ("hit", True, ["X", "Y"], 2)]
    assert review.cases_reviewed == 3 and review.frequent_cards[0] == ("X", 2)
    assert [(f.cases, f.cards) for f in review_findings(items, k=3)] == [(("miss",), ("X", "Z", "W"))]


def f(kind, cases=(), cards=(), cell=None, reason="r") -> Finding:
    return Finding(kind=kind, severity="low", cases=cases, cards=cards, cell=cell, reason=reason)


def test_diff_matches_by_kind_and_ids_not_by_reason():
    base = [f("duplicate_query", ("a", "b")), f("underpowered_cell", cell="kind=golden", reason="n = 3")]
    current = [f("duplicate_query", ("a", "b"), reason="other words"),
               f("underpowered_cell", cell="kind=golden", reason="n = 4"),
               f("duplicate_query", ("a", "c")), f("near_duplicate_query", ("a", "b"))]
    assert [(x.kind, x.cases) for x in introduced(current=current, base=base)] == [
        ("duplicate_query", ("a", "c")), ("near_duplicate_query", ("a", "b"))]
    assert resolved(current=current[2:], base=base) == sorted(base, key=lambda x: x.kind)


def test_provenance_digests_follow_content_not_order():
    a = [case("1", "q one", ["x", "y"]), case("2", "q two", ["z"])]
    b = [case("2", "q two", ["z"]), case("1", "q one", ["y", "x"])]
    assert labels_digest(a) == labels_digest(b) and queries_digest(a) == queries_digest(b)
    assert labels_digest(a) != labels_digest([case("1", "q one", ["x"]), case("2", "q two", ["z"])])
    assert queries_digest(a) != queries_digest([case("1", "q 1", ["x", "y"]), case("2", "q two", ["z"])])
    assert corpus_digest([card("a", "t")]) != corpus_digest([card("a", "t2")])


def test_audit_json_is_deterministic():
    cards = [card("refund", REFUND), card("refund-old", REFUND_TWIN), card("taxes", TAXES)]
    cases = [case("q1", "card refund timing", ["refund"], locale="en-US"), case("q2", "tax", ["taxes"])]
    one = audit(cases, cards).model_dump_json()
    two = audit(list(cases), list(cards)).model_dump_json()
    assert one == two


def test_a_query_leaking_into_several_cards_is_one_finding_naming_the_gold_first():
    cards = [card("refund", REFUND), card("refund-copy", REFUND + " Ask support."), card("taxes", TAXES)]
    report = audit([case("q1", "depending on the bank that issued the card", ["refund-copy"])], cards,
                   threshold=0.99)
    leaks = [f for f in report.findings if f.kind == "query_leakage"]
    assert [(f.severity, f.cards, f.data["n_cards"]) for f in leaks] == [("medium", ("refund", "refund-copy"), 2)]
    assert "in its gold card refund-copy (and 1 more card)" in leaks[0].reason


def test_leak_lookup_gives_the_same_pairs_whatever_the_batch_size(monkeypatch):
    import numpy as np

    from retrieval_gate.audit import queries

    cards = [np.array(sorted({(i * 7 + j) % 50 for j in range(12)}), dtype=np.uint32) for i in range(30)]
    qs = [cards[3][:5], cards[10][2:9], np.array([999, 1000], dtype=np.uint32), np.zeros(0, dtype=np.uint32)]
    whole = queries.leaked_queries(query_shingles=qs, card_shingles=cards, containment=0.9)
    monkeypatch.setattr(queries, "MATCH_BATCH", 7)
    assert queries.leaked_queries(query_shingles=qs, card_shingles=cards, containment=0.9) == whole
    # the queries made of a card's shingles are found in that card (and any card holding them all)
    assert {(i, 3) for i in (0,)} <= {(i, c) for i, c, _ in whole}
    assert {(1, 10)} <= {(i, c) for i, c, _ in whole}
    assert all(i in (0, 1) for i, _, _ in whole)
