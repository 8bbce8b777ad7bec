"""Searching a Chroma collection: through its HNSW index, or exactly over its stored vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from retrieval_gate.errors import StoreError
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
    """Every stored vector of the collection in one matrix (exact search over the store).

    Two passes: the ids first (sorted, they give each chunk its row), then the vectors, written
    page by page straight into their rows of one preallocated float32 matrix — so the peak is
    the matrix plus one page, not the three copies that collecting, concatenating and reordering
    pages would hold at once (n × dim × 4 bytes each: 307 MB at 200,000 chunks of dim 384)."""
    ids = sorted(_paged_ids(collection))
    row = {cid: i for i, cid in enumerate(ids)}
    metas: list[dict[str, Any]] = [{} for _ in ids]
    matrix: np.ndarray | None = None
    offset = 0
    while True:
        page = collection.get(include=["embeddings", "metadatas"], limit=PAGE, offset=offset)
        page_ids = page["ids"]
        if len(page_ids):
            vectors = np.asarray(page["embeddings"])
            if matrix is None:
                matrix = np.empty((len(ids), vectors.shape[1]), dtype=np.float32)
            if any(cid not in row for cid in page_ids):  # written to while being read (a shared server)
                raise StoreError("the Chroma collection changed while its vectors were being read; run again")
            rows = [row[cid] for cid in page_ids]
            matrix[rows] = vectors
            for r, meta in zip(rows, page["metadatas"] or [{}] * len(page_ids), strict=True):
                metas[r] = dict(meta or {})
        if len(page_ids) < PAGE:
            break
        offset += PAGE
    if matrix is None:
        matrix = np.zeros((0, 0), dtype=np.float32)
    return ExactIndex(ids=ids, card_ids=[str(m.get("parent_id", i)) for i, m in zip(ids, metas, strict=True)],
                      vectors=matrix, metadatas=metas)


def _paged_ids(collection: Any) -> list[str]:
    ids: list[str] = []
    offset = 0
    while True:
        page = collection.get(include=[], limit=PAGE, offset=offset)
        ids.extend(page["ids"])
        if len(page["ids"]) < PAGE:
            return ids
        offset += PAGE
