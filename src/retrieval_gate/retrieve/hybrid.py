"""Hybrid retrieval: Reciprocal Rank Fusion of a dense lane and a BM25 lane.

Each lane ranks ``depth`` distinct cards (same filter), then

    score(card) = 1 / (rrf_k + rank_dense(card)) + 1 / (rrf_k + rank_bm25(card))

(a lane that did not return the card adds 0; see ``fusion.rrf``) and the best ``limit`` cards are
kept. A query for which either lane failed fails as a whole: the hybrid is never silently
measured as one of its lanes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_gate.models import RankedList
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.fusion import DEFAULT_RRF_K, rrf
from retrieval_gate.retrieve.settings import DEFAULT_DEPTH


def fuse_lists(lanes: Sequence[RankedList], names: Sequence[str], limit: int, rrf_k: int) -> RankedList:
    """Fuse one query's lane answers; any lane error makes the fused answer an error."""
    errors = [f"{name} lane: {lane.error}" for name, lane in zip(names, lanes, strict=True) if lane.error]
    if errors:
        return RankedList(error="; ".join(errors))
    fused = rrf([lane.ids for lane in lanes], rrf_k=rrf_k)[:limit]
    latencies = [lane.latency_ms for lane in lanes if lane.latency_ms is not None]
    return RankedList(ids=tuple(d for d, _ in fused), scores=tuple(s for _, s in fused),
                      latency_ms=sum(latencies) if latencies else None)


class HybridRetriever:
    """RRF of several retrievers (normally ``dense`` and ``bm25``) behind the same contract."""

    name = "hybrid"

    def __init__(self, *, lanes: Sequence[Retriever], rrf_k: int = DEFAULT_RRF_K, depth: int = DEFAULT_DEPTH):
        if len(lanes) < 2:
            raise ValueError("hybrid needs at least two lanes")
        if rrf_k <= 0 or depth <= 0:
            raise ValueError("rrf k and depth must be positive")
        self.lanes = list(lanes)
        self.rrf_k = rrf_k
        self.depth = depth

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "rrf_k": self.rrf_k, "depth": self.depth,
                "lanes": [lane.fingerprint() for lane in self.lanes]}

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        depth = max(self.depth, limit)
        answers = [lane.search(queries, depth, filters) for lane in self.lanes]
        names = [lane.name for lane in self.lanes]
        return [fuse_lists([a[i] for a in answers], names, limit, self.rrf_k) for i in range(len(queries))]
