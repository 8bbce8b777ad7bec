"""Searching a Chroma collection: through its HNSW index, or exactly over its stored vectors
(read back and checked: ``store/verify.py``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from retrieval_gate.embed.check import NORM_TOLERANCE
from retrieval_gate.errors import StoreError
from retrieval_gate.filters import to_chroma_where
from retrieval_gate.store.base import Hit
from retrieval_gate.store.exact import ExactIndex
from retrieval_gate.store.verify import PAGE, read_verified

__all__ = ["PAGE", "ChromaIndex", "exact_index_from"]


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
