"""Dense retrieval: over-fetch, chunk → card mapping, first-occurrence dedupe, cut; exact search."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from retrieval_gate.models import RankedList
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.dense import DenseRetriever, overfetch_cards
from retrieval_gate.store.base import Hit
from retrieval_gate.store.exact import ExactIndex
from tests.fake_embedder import HashEmbedder


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def angles_index(card_of: list[str], metadatas: list[dict[str, Any]] | None = None) -> ExactIndex:
    """Chunk i at angle i·step on a quarter circle: for the query (1, 0) chunk 0 is best, then
    1, 2, … — a fully known ranking."""
    n = len(card_of)
    step = (np.pi / 2) / n
    vectors = np.stack([unit(np.cos(i * step), np.sin(i * step)) for i in range(n)])
    ids = [f"c{i:02d}" for i in range(n)]
    return ExactIndex(ids=ids, card_ids=card_of, vectors=vectors, metadatas=metadatas)


class Counting:
    """Records the n of every search (a wrapper of OUR ChunkIndex interface)."""

    def __init__(self, inner: ExactIndex):
        self.inner = inner
        self.name = inner.name
        self.asked: list[int] = []

    def count(self) -> int:
        return self.inner.count()

    def search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        self.asked.append(n)
        return self.inner.search(vector, n, where)


Q = unit(1.0, 0.0)


def test_exact_index_ranks_by_cosine_and_breaks_ties_by_chunk_id() -> None:
    vectors = np.stack([unit(1, 0), unit(0, 1), unit(1, 0), unit(1, 1)])
    index = ExactIndex(ids=["b", "z", "a", "m"], card_ids=["B", "Z", "A", "M"], vectors=vectors)
    hits = index.search(Q, 4)
    assert [h.chunk_id for h in hits] == ["a", "b", "m", "z"]  # a and b tie at 1.0: by id
    assert hits[0].score == pytest.approx(1.0) and hits[2].score == pytest.approx(np.sqrt(0.5))
    assert [h.chunk_id for h in index.search(Q, 1)] == ["a"]  # the tie is kept at the cut too


def test_dedupe_keeps_each_cards_first_best_chunk() -> None:
    index = angles_index(["A", "A", "B", "A", "C", "B"])
    cards, scores, _ = overfetch_cards(index, Q, limit=3, overfetch=2)
    assert cards == ["A", "B", "C"]
    assert scores[0] == pytest.approx(1.0)  # A's best chunk (c00)
    assert scores[0] > scores[1] > scores[2]


def test_overfetch_grows_until_k_distinct_cards() -> None:
    # 12 chunks of card A first, then B, C: limit 3 × overfetch 2 = 6 chunks holds only A
    counting = Counting(angles_index(["A"] * 12 + ["B", "C", "D"]))
    cards, _, n = overfetch_cards(counting, Q, limit=3, overfetch=2)
    assert cards == ["A", "B", "C"]
    assert counting.asked == [6, 12, 15]  # doubled, then capped at the index size
    assert n == 15


def test_overfetch_stops_when_the_store_is_exhausted() -> None:
    counting = Counting(angles_index(["A"] * 5 + ["B"]))
    cards, _, _ = overfetch_cards(counting, Q, limit=5, overfetch=3)
    assert cards == ["A", "B"]
    assert counting.asked == [6]  # 15 wanted, capped at the 6 chunks there are: one search


def test_enough_cards_on_the_first_fetch_means_one_search() -> None:
    counting = Counting(angles_index([f"K{i}" for i in range(40)]))
    cards, _, _ = overfetch_cards(counting, Q, limit=10, overfetch=3)
    assert cards == [f"K{i}" for i in range(10)]
    assert counting.asked == [30]


def test_a_filter_that_matches_few_chunks_stops_when_fewer_come_back() -> None:
    metas = [{"locale": "pt" if i % 5 == 0 else "en"} for i in range(30)]
    counting = Counting(angles_index([f"K{i}" for i in range(30)], metas))
    cards, _, _ = overfetch_cards(counting, Q, limit=10, overfetch=1, where={"locale": "pt"})
    assert cards == ["K0", "K5", "K10", "K15", "K20", "K25"]
    assert counting.asked == [10]  # 6 hits < 10 asked: nothing more to find


@pytest.mark.parametrize("limit", [0, -1])
def test_no_limit_no_search(limit: int) -> None:
    counting = Counting(angles_index(["A"]))
    assert overfetch_cards(counting, Q, limit=limit) == ([], [], 0)
    assert counting.asked == []


def test_empty_index_returns_nothing() -> None:
    empty = ExactIndex(ids=[], card_ids=[], vectors=np.zeros((0, 2), dtype=np.float32))
    assert overfetch_cards(empty, Q, limit=3) == ([], [], 0)


class Broken:
    name = "hnsw"

    def count(self) -> int:
        return 3

    def search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        raise RuntimeError("segment reader failed\nsecond line")


def test_dense_retriever_is_a_retriever_and_ranks_cards_with_scores_and_latency() -> None:
    emb = HashEmbedder()
    texts = {"refund-0": "refund a card payment", "refund-1": "refund card payment days",
             "invoice-0": "create an invoice"}
    index = ExactIndex(ids=list(texts), card_ids=[i.split("-")[0] for i in texts],
                       vectors=emb.embed_documents(list(texts.values())))
    dense = DenseRetriever(index=index, embedder=emb, overfetch=1, fingerprint={"model": "fake"})
    assert isinstance(dense, Retriever)
    (answer,) = dense.search(["card refund"], limit=2)
    assert answer.ids == ("refund", "invoice")
    assert answer.error is None and answer.latency_ms is not None and answer.latency_ms >= 0
    assert answer.scores is not None and answer.scores[0] > answer.scores[1]
    assert dense.fingerprint() == {"name": "dense", "overfetch": 1, "model": "fake"}


def test_one_failing_query_is_an_error_ranking_not_an_exception() -> None:
    dense = DenseRetriever(index=Broken(), embedder=HashEmbedder())
    answers = dense.search(["a", "b"], limit=3)
    assert [a.error for a in answers] == ["hnsw search failed: segment reader failed"] * 2
    assert all(isinstance(a, RankedList) and a.ids == () for a in answers)


def test_filters_are_applied_per_query() -> None:
    metas = [{"locale": "en"}, {"locale": "pt"}, {"locale": "en"}]
    index = angles_index(["A", "B", "C"], metas)
    dense = DenseRetriever(index=index, embedder=HashEmbedder())
    vectors = np.stack([Q, Q])
    en, pt = dense.rank(vectors, 3, [{"locale": "en"}, {"locale": {"$eq": "pt"}}])
    assert en.ids == ("A", "C") and pt.ids == ("B",)
