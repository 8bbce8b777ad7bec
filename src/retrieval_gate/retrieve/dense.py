"""Dense retrieval: embed the query, search a chunk index, map chunks to cards.

Over-fetch (docs/decisions.md): ask for ``n₀ = limit × overfetch`` chunks, map each chunk to
its card (``parent_id``), keep each card's first (best-scoring) occurrence; while fewer than
``limit`` distinct cards came out and the index may hold more (it returned all ``n`` asked for
and ``n`` < its size), double ``n`` and ask again. Then cut at ``limit``. So ``limit`` means
``limit`` distinct cards whenever the store has them, and a card's score is its best chunk's
cosine similarity.

Per-case latency is the time of this loop (index search + mapping) for one query; query
embedding is done once for the batch, through the cache, and is not part of it. Over an exact
index the scores of a block of queries come from one matrix product (``ExactIndex.score_many``),
whose time is shared equally by the block's queries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from retrieval_gate.embed.base import Embedder
from retrieval_gate.errors import StoreError, one_line
from retrieval_gate.models import RankedList
from retrieval_gate.store.base import ChunkIndex


def overfetch_cards(index: ChunkIndex, vector: np.ndarray, *, limit: int, overfetch: int = 3,
                    where: dict[str, Any] | None = None) -> tuple[list[str], list[float], int]:
    """``(cards, scores, n)``: the best ``limit`` distinct cards, their scores, and how many
    chunks the last search asked for (see the module docstring)."""
    total = index.count()
    if limit <= 0 or total == 0:
        return [], [], 0
    n = min(limit * max(overfetch, 1), total)
    while True:
        hits = index.search(vector, n, where)
        best: dict[str, float] = {}
        for hit in hits:
            best.setdefault(hit.card_id, hit.score)
        exhausted = len(hits) < n or n >= total
        if len(best) >= limit or exhausted:
            cards = list(best)[:limit]
            return cards, [best[c] for c in cards], n
        n = min(n * 2, total)


class DenseRetriever:
    """``retrieve.base.Retriever`` over an embedder and a chunk index."""

    name = "dense"

    def __init__(self, *, index: ChunkIndex, embedder: Embedder, overfetch: int = 3,
                 fingerprint: dict[str, Any] | None = None):
        self.index = index
        self.embedder = embedder
        self.overfetch = overfetch
        self._fingerprint = dict(fingerprint or {})

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "overfetch": self.overfetch, **self._fingerprint}

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        if not queries:
            return []
        vectors = self.embedder.embed_queries(list(queries))
        return self.rank(vectors, limit, filters)

    def rank(self, vectors: np.ndarray, limit: int,
             filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        """Rank cards for already-embedded queries (one row each)."""
        out: list[RankedList] = []
        score_many = getattr(self.index, "score_many", None)  # exact search: a block per product
        block_rows = max(1, min(256, _BLOCK_SCORES // max(1, self.index.count()))) if score_many else 1
        block: Any = None
        shared = 0.0
        for i in range(len(vectors)):
            where = filters[i] if filters is not None else None
            if score_many is not None and i % block_rows == 0:
                began = time.perf_counter()
                rows = vectors[i:i + block_rows]
                try:
                    block = score_many(rows)
                except Exception:  # searched one by one below, where a failure is counted per query
                    block = None
                shared = (time.perf_counter() - began) / len(rows)
            began = time.perf_counter() - shared
            index = self.index.scored(block[i % block_rows]) if block is not None else self.index  # type: ignore[attr-defined]
            try:
                cards, scores, _ = overfetch_cards(index, vectors[i], limit=limit,
                                                   overfetch=self.overfetch, where=where or None)
            except StoreError:  # a corrupt store is no one query's failure: the run stops
                raise
            except Exception as exc:  # one query's failure is counted, never raised (base.py)
                out.append(RankedList(error=f"{self.index.name} search failed: {one_line(exc)}",
                                      latency_ms=_ms(began)))
                continue
            out.append(RankedList(ids=tuple(cards), scores=tuple(scores), latency_ms=_ms(began)))
        return out


_BLOCK_SCORES = 16_000_000  # scores held per block of queries (64 MB of float32)


def _ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000.0, 3)
