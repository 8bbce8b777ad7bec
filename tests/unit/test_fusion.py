"""RRF (Cormack et al. 2009) and the hybrid retriever built on it."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_gate.models import RankedList
from retrieval_gate.retrieve.fusion import rrf
from retrieval_gate.retrieve.hybrid import HybridRetriever, fuse_lists

# A hand-worked RRF example (k = 60): d3 / d2 / d1 lead with 0.03252, 0.03178, 0.03150.
DENSE = ["d3", "d7", "d1", "d4", "d2", "d9", "d10"]
SPARSE = ["d2", "d3", "d8", "d1", "d11", "d4", "d6"]


def test_article_example_fuses_to_d3_d2_d1():
    fused = rrf([DENSE, SPARSE], rrf_k=60)
    assert [d for d, _ in fused[:3]] == ["d3", "d2", "d1"]


@pytest.mark.parametrize(
    ("doc", "printed", "by_hand"),
    [
        ("d3", 0.03252, 1 / 61 + 1 / 62),  # rank 1 dense, rank 2 sparse
        ("d2", 0.03178, 1 / 65 + 1 / 61),  # rank 5 dense, rank 1 sparse
        ("d1", 0.03150, 1 / 63 + 1 / 64),
        ("d8", 0.01587, 1 / 63),  # rank 3 sparse only: the dense lane adds nothing
    ],
)
def test_article_scores_match_the_printed_and_hand_worked_values(doc, printed, by_hand):
    scores = dict(rrf([DENSE, SPARSE], rrf_k=60))
    assert scores[doc] == pytest.approx(by_hand, abs=1e-15)
    assert round(scores[doc], 5) == pytest.approx(printed, abs=1e-12)


def test_every_document_of_either_lane_is_fused_once():
    fused = rrf([DENSE, SPARSE])
    assert sorted(d for d, _ in fused) == sorted(set(DENSE) | set(SPARSE))


@pytest.mark.parametrize("lanes", [[["d1", "d1"]], [["a", "b"], ["c", "b", "c"]]])
def test_a_lane_voting_twice_for_one_document_raises(lanes):
    with pytest.raises(ValueError, match="unique"):
        rrf(lanes)


@pytest.mark.parametrize("k", [0, -1])
def test_non_positive_k_raises(k):
    with pytest.raises(ValueError, match="positive"):
        rrf([["a"]], rrf_k=k)


def test_ties_keep_first_seen_order():
    # a and b both sit at rank 1 of one lane: equal scores, lane order decides.
    assert [d for d, _ in rrf([["a"], ["b"]])] == ["a", "b"]
    assert [d for d, _ in rrf([["b"], ["a"]])] == ["b", "a"]


def test_smaller_k_weights_top_ranks_more():
    # x: rank 1 in lane A only; y: rank 3 in both lanes.
    lanes = [["x", "p", "y"], ["q", "r", "y"]]
    assert dict(rrf(lanes, rrf_k=1))["x"] == dict(rrf(lanes, rrf_k=1))["y"] == 0.5  # 1/2 = 2/4
    assert rrf(lanes, rrf_k=60)[0][0] == "y"  # 2/63 > 1/61
    assert rrf(lanes, rrf_k=0.5)[0][0] == "x"  # 1/1.5 > 2/3.5


def test_no_lanes_fuse_to_nothing():
    assert rrf([]) == []
    assert rrf([[], []]) == []


def test_fuse_lists_cuts_at_limit_and_sums_latency():
    out = fuse_lists([RankedList(ids=tuple(DENSE), latency_ms=2.0), RankedList(ids=tuple(SPARSE), latency_ms=3.0)],
                     ["dense", "bm25"], limit=2, rrf_k=60)
    assert out.ids == ("d3", "d2")
    assert out.scores == pytest.approx((1 / 61 + 1 / 62, 1 / 65 + 1 / 61))
    assert out.latency_ms == 5.0
    assert out.error is None


def test_fuse_lists_fails_the_query_when_a_lane_failed():
    out = fuse_lists([RankedList(ids=("a",)), RankedList(error="timeout")], ["dense", "bm25"], limit=5, rrf_k=60)
    assert out.ids == ()
    assert out.error == "bm25 lane: timeout"


class FakeLane:
    """A fake of OUR Retriever interface: fixed answers, records what it was asked."""

    def __init__(self, name: str, answers: list[RankedList]):
        self.name = name
        self.answers = answers
        self.calls: list[tuple[list[str], int, Any]] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name}

    def search(self, queries, limit, filters=None):
        self.calls.append((list(queries), limit, filters))
        return self.answers[: len(queries)]


def test_hybrid_asks_each_lane_for_depth_with_the_same_filters_and_fuses():
    dense = FakeLane("dense", [RankedList(ids=tuple(DENSE)), RankedList(ids=("z",))])
    sparse = FakeLane("bm25", [RankedList(ids=tuple(SPARSE)), RankedList(error="boom")])
    hybrid = HybridRetriever(lanes=[dense, sparse], rrf_k=60, depth=30)
    filters = [{"locale": "en-US"}, None]
    out = hybrid.search(["q1", "q2"], 3, filters)
    assert dense.calls == [(["q1", "q2"], 30, filters)]
    assert sparse.calls == [(["q1", "q2"], 30, filters)]
    assert out[0].ids == ("d3", "d2", "d1")
    assert out[1].error == "bm25 lane: boom"
    assert hybrid.fingerprint() == {"name": "hybrid", "rrf_k": 60, "depth": 30,
                                    "lanes": [{"name": "dense"}, {"name": "bm25"}]}


def test_hybrid_depth_never_below_limit():
    dense = FakeLane("dense", [RankedList(ids=("a",))])
    sparse = FakeLane("bm25", [RankedList(ids=("b",))])
    HybridRetriever(lanes=[dense, sparse], depth=5).search(["q"], 20)
    assert dense.calls[0][1] == 20


def test_hybrid_needs_two_lanes():
    with pytest.raises(ValueError):
        HybridRetriever(lanes=[FakeLane("dense", [])])
