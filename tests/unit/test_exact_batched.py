"""Exact search in blocks of queries (one matrix product per block, for the cost curve) ranks
as one search per query does; filters and over-fetch behave the same."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from retrieval_gate.retrieve import dense as dense_module
from retrieval_gate.retrieve.dense import DenseRetriever
from retrieval_gate.store.exact import ExactIndex


class OneByOne:
    """The same exact index without ``score_many``: the per-query path."""

    def __init__(self, index: ExactIndex):
        self.index = index
        self.name = index.name

    def count(self) -> int:
        return self.index.count()

    def search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> Any:
        return self.index.search(vector, n, where)


def unit_rows(rng: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("block_scores", [10**9, 700, 1], ids=["one-block", "blocks-of-7", "one-query-per-block"])
def test_blocked_exact_search_ranks_as_one_search_per_query(monkeypatch: pytest.MonkeyPatch,
                                                            block_scores: int) -> None:
    monkeypatch.setattr(dense_module, "_BLOCK_SCORES", block_scores)
    rng = np.random.default_rng(3)
    n = 100  # 3 chunks per card for most cards: over-fetch must double at times
    ids = [f"ch{i:03d}" for i in range(n)]
    cards = [f"card{i // 3}" for i in range(n)]
    metas = [{"lang": "en" if i % 4 else "pt"} for i in range(n)]
    index = ExactIndex(ids=ids, card_ids=cards, vectors=unit_rows(rng, n), metadatas=metas)
    queries = unit_rows(rng, 23)
    filters = [None if j % 3 else {"lang": "pt"} for j in range(23)]
    blocked = DenseRetriever(index=index, embedder=None, overfetch=1).rank(queries, 5, filters)  # type: ignore[arg-type]
    single = DenseRetriever(index=OneByOne(index), embedder=None, overfetch=1).rank(queries, 5, filters)  # type: ignore[arg-type]
    assert [r.ids for r in blocked] == [r.ids for r in single]
    assert all(len(r.ids) == 5 for r in blocked)
    for a, b in zip(blocked, single, strict=True):
        assert np.allclose(a.scores, b.scores, atol=1e-6)
        assert a.latency_ms is not None and a.latency_ms >= 0
