"""Reading every stored vector back and checking it before it is searched.

Each row written by ``sync`` carries in its metadata ``rg_check`` (a CRC-32 of its chunk id and
card id) and ``rg_p0``, ``rg_p1`` (two fixed ±1 projections of the vector written,
``embed/check.py``). A row passes when the CRC matches, the projections of the vector read back
match within ``PROJECTION_TOLERANCE``, it has the collection's dimension, and it is finite and
unit length. Rows that fail are counted; the store adapter rebuilds the collection when any does
(``store/chroma.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrieval_gate.embed.check import (
    PROJECTION_TOLERANCE,
    PROJECTIONS,
    bad_rows,
    common_length,
    projections,
    text_checksum,
)
from retrieval_gate.store.exact import ExactIndex

PAGE = 10_000  # rows per collection.get page
CHECK_KEY = "rg_check"
PROJECTION_KEYS = tuple(f"rg_p{i}" for i in range(PROJECTIONS))


@dataclass
class VerifiedRows:
    """What a full read of the collection found: the rows (kept only when asked) and how many
    failed the check."""

    total: int = 0
    bad: int = 0
    ids: list[str] = field(default_factory=list)
    card_ids: list[str] = field(default_factory=list)
    metadatas: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[np.ndarray] = field(default_factory=list)

    def index(self) -> ExactIndex:
        vectors = np.concatenate(self.blocks) if self.blocks else np.zeros((0, 0), dtype=np.float32)
        return ExactIndex(ids=self.ids, card_ids=self.card_ids, vectors=vectors, metadatas=self.metadatas)


def bad_in_page(ids: list[str], metas: list[dict[str, Any]], rows: list[Any], *, dim: int | None) -> np.ndarray:
    """The mask of rows of one page that fail the check."""
    bad = np.zeros(len(ids), dtype=bool)
    stored = np.zeros((len(ids), PROJECTIONS), dtype=np.float64)
    for i, (cid, meta, row) in enumerate(zip(ids, metas, rows, strict=True)):
        length = np.asarray(row).reshape(-1).shape[0]
        wanted = [meta.get(key) for key in PROJECTION_KEYS]
        ident = text_checksum(cid, str(meta.get("parent_id", cid)))
        if ((dim is not None and length != dim) or meta.get(CHECK_KEY) != ident
                or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in wanted)):
            bad[i] = True
        else:
            stored[i] = wanted
    good = np.flatnonzero(~bad)
    if good.size:
        matrix = np.stack([np.asarray(rows[i], dtype=np.float32).reshape(-1) for i in good])
        drift = np.abs(projections(matrix) - stored[good])
        bad[good[bad_rows(matrix) | ~(drift <= PROJECTION_TOLERANCE).all(axis=1)]] = True
    return bad


def read_verified(collection: Any, *, keep: bool) -> VerifiedRows:
    """Every row of ``collection``, checked; ``keep``: hold the good rows for an exact index."""
    out = VerifiedRows()
    dim: int | None = None
    offset = 0
    while True:
        page = collection.get(include=["embeddings", "metadatas"], limit=PAGE, offset=offset)
        ids = list(page["ids"])
        metas = [dict(m or {}) for m in (page["metadatas"] or [{}] * len(ids))]
        rows = list(page["embeddings"]) if ids else []
        if dim is None:
            dim = common_length(len(np.asarray(r).reshape(-1)) for r in rows)
        bad = bad_in_page(ids, metas, rows, dim=dim)
        out.total += len(ids)
        out.bad += int(bad.sum())
        if keep and ids and not bad.any():
            out.ids.extend(ids)
            out.metadatas.extend(metas)
            out.card_ids.extend(str(m.get("parent_id", cid)) for cid, m in zip(ids, metas, strict=True))
            out.blocks.append(np.asarray(rows, dtype=np.float32).reshape(len(ids), -1))
        if len(ids) < PAGE:
            return out
        offset += PAGE


def row_checks(vectors: np.ndarray, chunk_ids: list[str], card_ids: list[str]) -> list[dict[str, Any]]:
    """The check values ``sync`` stores in each row's metadata."""
    proj = projections(vectors)
    return [{CHECK_KEY: text_checksum(cid, card), **dict(zip(PROJECTION_KEYS, map(float, row), strict=True))}
            for cid, card, row in zip(chunk_ids, card_ids, proj, strict=True)]
