"""Searching a Chroma collection: through its HNSW index, or exactly over its stored vectors
(read back and checked: ``store/verify.py``); and ``exact_top_cards``, exact search for a few
queries streamed over the collection's pages (the ANN path's sample check: memory one page,
never the whole matrix)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrieval_gate.embed.check import NORM_TOLERANCE
from retrieval_gate.errors import StoreError
from retrieval_gate.filters import filter_key, matches, to_chroma_where
from retrieval_gate.store.base import Hit
from retrieval_gate.store.exact import ExactIndex
from retrieval_gate.store.verify import PAGE, read_verified

__all__ = ["PAGE", "ChromaIndex", "exact_index_from", "exact_top_cards"]


class ChromaIndex:
    """HNSW search through Chroma: ``score = 1 − cosine distance``."""

    name = "hnsw"

    def __init__(self, collection: Any):
        self.collection = collection
        self._count = int(collection.count())

    def count(self) -> int:
        return self._count

    def search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        n = min(n, self._count)
        if n <= 0:
            return []
        res = self.collection.query(query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
                                    n_results=n, where=to_chroma_where(where),
                                    include=["metadatas", "distances"])
        ids = res["ids"][0]
        metas = (res.get("metadatas") or [[{}] * len(ids)])[0]
        dists = (res.get("distances") or [[0.0] * len(ids)])[0]
        hits = [Hit(cid, str((m or {}).get("parent_id", cid)), 1.0 - float(d))
                for cid, m, d in zip(ids, metas, dists, strict=True)]
        # Unit vectors have similarities in [-1, 1]: anything else is a corrupt index answering.
        for hit in hits:
            if not math.isfinite(hit.score) or abs(hit.score) > 1.0 + 4 * NORM_TOLERANCE:
                raise StoreError(f"the store's HNSW index answered a similarity of {hit.score:.6g} for chunk "
                                 f"{hit.chunk_id!r} (unit vectors give -1..1): the index is corrupt; delete the "
                                 "store folder (or its chroma/ folder) and run again")
        return hits


def exact_index_from(collection: Any) -> ExactIndex:
    """Every stored vector of the collection in one matrix (exact search over the store), each
    checked; a row that fails is a ``StoreError`` (the store adapter rebuilds before this)."""
    rows = read_verified(collection, keep=True)
    if rows.bad:
        raise StoreError(f"{rows.bad} of {rows.total} stored vectors failed the check (checksum, dimension, "
                         "finite, unit norm): the store is corrupt; delete its chroma/ folder and run again")
    return rows.index()


def exact_top_cards(collection: Any, vectors: np.ndarray, limit: int,
                    wheres: Sequence[Mapping[str, Any] | None] | None = None, *,
                    page: int = PAGE) -> list[list[tuple[str, float]]]:
    """For each query vector, the best ``limit`` distinct cards, with their scores, by exact search over every stored
    vector, read page by page (memory: one page and ``len(vectors) × limit`` entries): what
    ``DenseRetriever`` over an ``ExactIndex`` of the same rows returns — a card's score is its best
    chunk's (``score = q · c``), cards ordered by score, ties to the lower chunk id; ``wheres`` the
    same predicate (``filters.matches``).

    Keeping only each query's best ``limit`` cards after every page is exact: a card's score is a
    maximum over its chunks, and a card dropped below the ``limit``-th score can only come back
    with a higher score (its new best), the ``limit``-th score never falls."""
    queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    wheres = list(wheres) if wheres is not None else [None] * len(queries)
    best: list[dict[str, tuple[float, str]]] = [{} for _ in range(len(queries))]  # card → (score, chunk id)
    if limit <= 0 or not len(queries):
        return [[] for _ in range(len(queries))]
    offset = 0
    while True:
        got = collection.get(include=["embeddings", "metadatas"], limit=page, offset=offset)
        ids = list(got["ids"])
        if ids:
            metas = [dict(m or {}) for m in (got["metadatas"] or [{}] * len(ids))]
            rows = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(ids), -1)
            scores = rows @ queries.T  # (page rows, queries)
            cards = [str(m.get("parent_id", cid)) for cid, m in zip(ids, metas, strict=True)]
            masks: dict[str, np.ndarray] = {}
            for j, where in enumerate(wheres):
                column = scores[:, j]
                if where:
                    key = filter_key(where)
                    if key not in masks:
                        masks[key] = np.fromiter((matches(m, where=where) for m in metas), dtype=bool, count=len(ids))
                    candidates = np.flatnonzero(masks[key])
                else:
                    candidates = np.arange(len(ids))
                _merge(best[j], column, candidates, ids, cards, limit)
        if len(ids) < page:
            break
        offset += page
        del got, ids  # one page held at a time: the next read does not overlap this one
        metas = rows = scores = cards = None  # type: ignore[assignment]
    return [[(card, score) for card, (score, _cid) in sorted(b.items(), key=lambda item: (-item[1][0], item[1][1]))]
            [:limit] for b in best]


def _merge(best: dict[str, tuple[float, str]], scores: np.ndarray, candidates: np.ndarray, ids: Sequence[str],
           cards: Sequence[str], limit: int) -> None:
    """Fold one page's rows ``candidates`` into ``best`` (card → (score, chunk id)), then keep the
    best ``limit`` cards. Only the page's rows down to its ``limit``-th distinct card (and any
    tied with it) can enter: the page's own best ``limit`` cards all score at least as high."""
    if candidates.size == 0:
        return
    values = scores[candidates]
    width = min(candidates.size, 4 * limit)
    while True:
        top = (np.argpartition(-values, width - 1)[:width] if width < candidates.size
               else np.arange(candidates.size))
        order = top[np.lexsort((np.asarray([ids[candidates[i]] for i in top]), -values[top]))]
        seen: set[str] = set()
        cut: float | None = None
        taken = []
        for i in order:
            value = float(values[i])
            if cut is not None and value < cut:
                break
            taken.append(candidates[i])
            seen.add(cards[candidates[i]])
            if cut is None and len(seen) >= limit:
                cut = value
        # enough distinct cards, none tied with the cut left outside the window: exact
        outside_tie = width < candidates.size and cut is not None and float(values[order[-1]]) >= cut
        if width >= candidates.size or (cut is not None and not outside_tie):
            break
        width = min(candidates.size, width * 2)
    for r in taken:
        value, card, cid = float(scores[r]), cards[r], ids[r]
        held = best.get(card)
        if held is None or (-value, cid) < (-held[0], held[1]):
            best[card] = (value, cid)
    _trim(best, limit)


def _trim(best: dict[str, tuple[float, str]], limit: int) -> None:
    if len(best) > limit:
        keep = sorted(best.items(), key=lambda item: (-item[1][0], item[1][1]))[:limit]
        best.clear()
        best.update(keep)
