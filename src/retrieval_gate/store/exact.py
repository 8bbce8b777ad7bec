"""Exact (brute-force) search over a matrix of normalised chunk vectors. Pure numpy.

    score(q, c) = q · c  (cosine similarity: every vector has norm 1)

Top ``n`` by score descending; ties broken by the chunk's row (rows are sorted by chunk id), so
the ranking is deterministic. ``where`` filters use the same predicate as every other retriever
(``filters.matches``); one boolean mask per distinct filter is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrieval_gate.filters import filter_key, matches
from retrieval_gate.store.base import Hit


class ExactIndex:
    name = "exact"

    def __init__(self, *, ids: Sequence[str], card_ids: Sequence[str], vectors: np.ndarray,
                 metadatas: Sequence[Mapping[str, Any]] | None = None):
        order = sorted(range(len(ids)), key=lambda i: ids[i])
        self.ids = [ids[i] for i in order]
        self.card_ids = [card_ids[i] for i in order]
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1) if len(ids) else np.zeros((0, 0))
        self.matrix = np.ascontiguousarray(matrix[order]) if len(ids) else matrix.astype(np.float32)
        self.metadatas = [dict(metadatas[i]) for i in order] if metadatas is not None else [{} for _ in order]
        self._masks: dict[str, np.ndarray] = {}

    def count(self) -> int:
        return len(self.ids)

    def _mask(self, where: Mapping[str, Any]) -> np.ndarray:
        key = filter_key(where)
        mask = self._masks.get(key)
        if mask is None:
            mask = np.fromiter((matches(m, where=where) for m in self.metadatas), dtype=bool, count=len(self.ids))
            self._masks[key] = mask
        return mask

    def search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        if n <= 0 or not self.ids:
            return []
        return self.top(self.matrix @ np.asarray(vector, dtype=np.float32).reshape(-1), n, where)

    def score_many(self, vectors: np.ndarray) -> np.ndarray:
        """``(len(vectors), count)`` scores in one matrix product: the stored matrix is read once
        for the whole block instead of once per query (per-query search is memory-bound: the
        cost curve in benchmarks/bench_cost_curve.py). Each row is independent of the others in
        the block; it may differ from ``search``'s matrix-vector product in the last float32 bit."""
        block = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        return block @ self.matrix.T

    def scored(self, scores: np.ndarray) -> PrescoredIndex:
        """This index answering one query whose scores (a row of ``score_many``) are known."""
        return PrescoredIndex(self, scores)

    def top(self, scores: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        """The best ``n`` rows for one query's ``scores`` (ties to the lower row), filtered."""
        if n <= 0 or not self.ids:
            return []
        rows = np.flatnonzero(self._mask(where)) if where else np.arange(len(self.ids))
        if rows.size == 0:
            return []
        if n < rows.size:  # keep every row tied with the n-th score, so ties go to the lower row
            nth = scores[rows][np.argpartition(-scores[rows], n - 1)[n - 1]]
            rows = rows[scores[rows] >= nth]
        rows = rows[np.lexsort((rows, -scores[rows]))][:n]
        return [Hit(self.ids[r], self.card_ids[r], float(scores[r])) for r in rows]


class PrescoredIndex:
    """An ``ExactIndex`` for one query whose scores were computed with the block's (the
    ``ChunkIndex`` interface: ``search`` ignores the vector and uses the scores)."""

    name = "exact"

    def __init__(self, index: ExactIndex, scores: np.ndarray):
        self.index = index
        self.scores = scores

    def count(self) -> int:
        return self.index.count()

    def search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        return self.index.top(self.scores, n, where)
