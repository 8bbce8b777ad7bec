"""Searching a Chroma collection: through its HNSW index, or exactly over its stored vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from retrieval_gate.store.base import Hit
from retrieval_gate.store.chroma_where import to_chroma_where
from retrieval_gate.store.exact import ExactIndex

PAGE = 10_000  # rows per collection.get page


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
        return [Hit(cid, str((m or {}).get("parent_id", cid)), 1.0 - float(d))
                for cid, m, d in zip(ids, metas, dists, strict=True)]


def exact_index_from(collection: Any) -> ExactIndex:
    """Every stored vector of the collection in one matrix (exact search over the store)."""
    ids: list[str] = []
    metas: list[dict[str, Any]] = []
    blocks: list[np.ndarray] = []
    offset = 0
    while True:
        page = collection.get(include=["embeddings", "metadatas"], limit=PAGE, offset=offset)
        ids.extend(page["ids"])
        metas.extend(dict(m or {}) for m in (page["metadatas"] or [{}] * len(page["ids"])))
        if len(page["ids"]):
            blocks.append(np.asarray(page["embeddings"], dtype=np.float32))
        if len(page["ids"]) < PAGE:
            break
        offset += PAGE
    vectors = np.concatenate(blocks) if blocks else np.zeros((0, 0), dtype=np.float32)
    return ExactIndex(ids=ids, card_ids=[str(m.get("parent_id", i)) for i, m in zip(ids, metas, strict=True)],
                      vectors=vectors, metadatas=metas)
