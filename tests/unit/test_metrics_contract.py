"""The metric contract (docs/decisions.md), pinned with hand-worked numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from retrieval_gate.errors import UsageError
from retrieval_gate.load.kb import load_kb
from retrieval_gate.metrics import (
    dedupe_first,
    metric_specs,
    parse_k_list,
    parse_metric,
    to_cards,
)
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.scoring import score_case
from tests.reference import case_scores, hit_at_k, ndcg_at_k, recall_at_k

GRID = metric_specs((1, 3, 5, 10))


def case_set(*cases: Case) -> CaseSet:
    return CaseSet(cases=cases, path="cases.jsonl", sha256="0" * 64, format="jsonl",
                   lines={c.id: i + 1 for i, c in enumerate(cases)})


def ranking(*ids: str) -> RankedList:
    return RankedList(ids=ids)


# --- a published worked example: four queries, top-10 runs ---------------------------------------

ARTICLE_GOLD = {"q1": ["d3"], "q2": ["d7", "d2"], "q3": ["d11"], "q4": ["d5"]}
ARTICLE_RUNS = {
    "q1": ["d8", "d3", "d1", "d4", "d2", "d9", "d6", "d10", "d12", "d13"],
    "q2": ["d2", "d6", "d4", "d7", "d1", "d3", "d8", "d11", "d5", "d9"],
    "q3": ["d11", "d2", "d3", "d4", "d1", "d6", "d7", "d8", "d10", "d12"],
    "q4": ["d1", "d2", "d3", "d6", "d8", "d9", "d10", "d12", "d13", "d14"],
}


def test_reference_article_worked_example() -> None:
    """Recall@5 = 0.750, MRR = 0.625, nDCG@5 = 0.627 (the example prints three decimals; its MRR
    is uncut over top-10 runs, i.e. our mrr@10)."""
    cases = case_set(*(Case(id=q, query=q, gold=tuple(g)) for q, g in ARTICLE_GOLD.items()))
    results = assemble_results(case_set=cases, rankings={q: ranking(*r) for q, r in ARTICLE_RUNS.items()},
                               metrics=metric_specs((5, 10)), ks=(5, 10))
    overall = results.aggregates["overall"]
    assert overall["recall@5"].value == 0.75
    assert overall["mrr@10"].value == 0.625
    assert overall["mrr@5"].value == 0.625
    assert round(overall["ndcg@5"].value, 3) == 0.627
    # Worked by hand: q1 d3 at rank 2; q2 d2 at 1 and d7 at 4 (two gold, IDCG over 2); q3 at 1; q4 none.
    by_hand = (1 / math.log2(3) + (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3)) + 1 + 0) / 4
    assert overall["ndcg@5"].value == pytest.approx(by_hand, abs=1e-12)
    assert overall["ndcg@5"].n == 4


# --- hand-worked values of each measure ------------------------------------------------------------

@pytest.mark.parametrize(
    ("ranked", "gold", "k", "expected"),
    [
        # hit@k: any gold card in the top k
        (["a", "b", "c"], {"c"}, 2, {"hit": 0.0, "recall": 0.0, "precision": 0.0, "mrr": 0.0, "ndcg": 0.0, "map": 0.0}),
        (["a", "b", "c"], {"c"}, 3, {"hit": 1.0, "recall": 1.0, "precision": 1 / 3, "mrr": 1 / 3,
                                      "ndcg": 1 / math.log2(4), "map": 1 / 3}),
        # disjunctive gold: one of two acceptable cards → hit 1, recall 0.5 (the lower-bound caveat)
        (["x", "g1"], {"g1", "g2"}, 2, {"hit": 1.0, "recall": 0.5, "precision": 0.5, "mrr": 0.5,
                                        "ndcg": (1 / math.log2(3)) / (1 + 1 / math.log2(3)), "map": 0.25}),
        # run shorter than k: precision still divides by k (trec_eval P_k)
        (["g"], {"g"}, 5, {"hit": 1.0, "recall": 1.0, "precision": 0.2, "mrr": 1.0, "ndcg": 1.0, "map": 1.0}),
        # empty ranking
        ([], {"g"}, 3, {"hit": 0.0, "recall": 0.0, "precision": 0.0, "mrr": 0.0, "ndcg": 0.0, "map": 0.0}),
        # |gold| > k with the top k all gold: nDCG exactly 1 (IDCG over min(k, |gold|)), recall 3/5
        (["g1", "g2", "g3"], {"g1", "g2", "g3", "g4", "g5"}, 3,
         {"hit": 1.0, "recall": 0.6, "precision": 1.0, "mrr": 1.0, "ndcg": 1.0, "map": 0.6}),
        # AP: gold at ranks 1 and 3 of 2 gold → (1/1 + 2/3) / 2
        (["g1", "x", "g2", "y"], {"g1", "g2"}, 4, {"hit": 1.0, "recall": 1.0, "precision": 0.5, "mrr": 1.0,
                                                    "ndcg": (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)),
                                                    "map": (1 + 2 / 3) / 2}),
    ],
)
def test_measures_by_hand(ranked: list[str], gold: set[str], k: int, expected: dict[str, float]) -> None:
    got = case_scores(tuple(ranked), sorted(gold), metric_specs((k,)))
    assert got == pytest.approx({f"{m}@{k}": v for m, v in expected.items()}, abs=1e-12)


def test_ndcg_is_never_above_one_when_gold_outnumbers_k() -> None:
    gold = {f"g{i}" for i in range(20)}
    ranked = tuple(sorted(gold))
    for k in (1, 3, 5, 10):
        assert ndcg_at_k(ranked, gold, k) == 1.0
        assert recall_at_k(ranked, gold, k) == k / 20


# --- de-duplicate before the cut (docs/decisions.md) ---------------------------------------------

@pytest.mark.parametrize(
    ("raw", "gold", "k", "metric", "expected"),
    [
        # a duplicate never hides a later card: after dedupe, b is at rank 2
        (["a", "a", "b"], ["b"], 2, "hit", 1.0),
        (["a", "a", "a", "b"], ["b"], 2, "mrr", 0.5),
        # a duplicate never counts twice
        (["g", "g", "x"], ["g"], 2, "precision", 0.5),
        (["g", "g"], ["g"], 2, "recall", 1.0),
        (["g", "g", "h"], ["g", "h"], 2, "ndcg", 1.0),
        (["g", "g", "h"], ["g", "h"], 2, "map", 1.0),
    ],
)
def test_duplicates_are_removed_before_the_cut(raw: list[str], gold: list[str], k: int, metric: str,
                                               expected: float) -> None:
    result = score_case(case=Case(id="c", query="q", gold=tuple(gold)), ranking=ranking(*raw),
                        metrics=metric_specs((k,), (metric,)))
    assert result.scores == {f"{metric}@{k}": expected}
    assert result.retrieved == list(dedupe_first(raw))


def test_dedupe_keeps_first_occurrence_order() -> None:
    assert dedupe_first(["b", "a", "b", "c", "a"]) == ("b", "a", "c")


@pytest.mark.parametrize("limit", [None, 1, 2, 3, 10])
def test_to_cards_maps_chunks_to_their_card_then_dedupes(limit: int | None) -> None:
    chunk_to_card = {"A#1": "A", "A#2": "A", "B#1": "B", "C": "C"}
    ids = ["A#1", "A#2", "A#1", "B#1", "X", "C"]
    full = ("A", "B", "X", "C")
    assert to_cards(ids, chunk_to_card, limit=limit) == (full if limit is None else full[:limit])
    assert to_cards(ids, None) == ("A#1", "A#2", "B#1", "X", "C")


def test_chunk_ranking_is_scored_at_card_level_via_parent_id(tmp_path: Path) -> None:
    kb_file = tmp_path / "kb.jsonl"
    kb_file.write_text(
        '{"id": "A#1", "text": "t", "parent_id": "A"}\n'
        '{"id": "A#2", "text": "t", "parent_id": "A"}\n'
        '{"id": "A#3", "text": "t", "parent_id": "A"}\n'
        '{"id": "B#1", "text": "t", "parent_id": "B"}\n'
        '{"id": "C", "text": "t"}\n'
    )
    kb = load_kb(kb_file)
    cases = case_set(Case(id="c1", query="q", gold=("B",)), Case(id="c2", query="q", gold=("A", "C")))
    rankings = {"c1": ranking("A#1", "A#2", "A#3", "B#1"), "c2": ranking("A#2", "A#1", "C")}
    results = assemble_results(case_set=cases, rankings=rankings, metrics=metric_specs((1, 2)), ks=(1, 2), kb=kb)
    c1, c2 = results.cases
    # three chunks of A collapse to one card, so B is the second card: hit@2, not a miss
    assert c1.retrieved == ["A", "B"]
    assert c1.scores["hit@1"] == 0.0 and c1.scores["hit@2"] == 1.0 and c1.scores["mrr@2"] == 0.5
    # A counted once: recall@2 = 2/2 (A and C), precision@2 = 1
    assert c2.retrieved == ["A", "C"]
    assert c2.scores["recall@2"] == 1.0 and c2.scores["precision@2"] == 1.0


# --- the empty-gold contract and the denominator (docs/decisions.md) -----------------------------

def test_empty_gold_contributes_no_score_keys_and_keeps_n_honest() -> None:
    cases = case_set(
        Case(id="has", query="q", gold=("a",)),
        Case(id="none", query="q", gold=()),
    )
    results = assemble_results(case_set=cases, rankings={"has": ranking("a"), "none": ranking("a")},
                               metrics=GRID, ks=(1, 3, 5, 10))
    has, none = results.cases
    assert none.scores == {} and none.status == "no_gold" and "no-answer" in none.slices
    assert has.status == "scored" and "no-answer" not in has.slices
    assert results.aggregates["overall"]["hit@1"].value == 1.0  # not diluted to 0.5
    assert results.aggregates["overall"]["hit@1"].n == 1
    assert results.completeness.no_gold == 1 and results.completeness.scored == 1


def test_adversarial_case_with_gold_is_scored() -> None:
    case = Case(id="adv", query="q", gold=("a",), kind="adversarial", should_refuse=True)
    result = score_case(case=case, ranking=ranking("b", "a"), metrics=GRID)
    assert result.status == "scored"
    assert result.scores["hit@1"] == 0.0 and result.scores["hit@3"] == 1.0
    assert "kind=adversarial" in result.slices


@pytest.mark.parametrize(
    ("ranked", "scores", "expected"),
    [
        ((), None, 1.0),  # returned nothing: correctly abstained
        (("a", "b"), (0.2, 0.1), 1.0),  # nothing at or above the threshold
        (("a", "b"), (0.5, 0.1), 0.0),  # something at the threshold: a false answer
        (("a",), None, 0.0),  # ids without scores cannot show abstention
    ],
)
def test_no_gold_case_scores_abstention_only_with_a_threshold(ranked, scores, expected) -> None:
    case = Case(id="n", query="q", gold=())
    ranked_list = RankedList(ids=ranked, scores=scores)
    assert score_case(case=case, ranking=ranked_list, metrics=GRID).scores == {}
    result = score_case(case=case, ranking=ranked_list, metrics=GRID, abstain_threshold=0.5)
    assert result.scores == {"abstention": expected}
    assert result.status == "no_gold"


def test_hit_and_recall_reference_functions_agree_on_the_lower_bound_example() -> None:
    assert hit_at_k(["g2"], {"g1", "g2"}, 1) == 1.0
    assert recall_at_k(["g2"], {"g1", "g2"}, 1) == 0.5


# --- metric names and k lists ---------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "name", "display"),
    [
        ("hit@5", "hit@5", "hit@5"),
        ("nDCG@10", "ndcg@10", "nDCG@10"),
        ("ndcg_cut_10", "ndcg@10", "nDCG@10"),
        ("P@5", "precision@5", "precision@5"),
        ("recip_rank@3", "mrr@3", "MRR@3"),
        ("map_cut_100", "map@100", "MAP@100"),
        ("recall@1", "recall@1", "recall@1"),
    ],
)
def test_parse_metric(text: str, name: str, display: str) -> None:
    spec = parse_metric(text)
    assert (spec.name, spec.display) == (name, display)


@pytest.mark.parametrize("text", ["ndcg", "foo@3", "ndcg@0", "ndcg@x", ""])
def test_parse_metric_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_metric(text)


@pytest.mark.parametrize(("text", "expected"), [("1,3,5,10", (1, 3, 5, 10)), ("10, 1,1", (1, 10)), ([5, 3], (3, 5))])
def test_parse_k_list(text, expected) -> None:
    assert parse_k_list(text) == expected


@pytest.mark.parametrize("text", ["", "0", "1,a", "-3"])
def test_parse_k_list_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_k_list(text)
