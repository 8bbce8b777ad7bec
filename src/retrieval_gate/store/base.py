"""The store contracts: a searchable chunk index, and what a sync did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    card_id: str
    score: float  # cosine similarity (vectors are normalised)


class ChunkIndex(Protocol):
    name: str  # "hnsw" | "exact"

    def count(self) -> int:
        """Chunks in the index."""
        ...

    def search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        """The ``n`` best chunks for one query vector (fewer when fewer match), best first."""
        ...


@dataclass
class SyncReport:
    """What ``sync`` changed. ``rebuilt`` says why the collection was recreated, if it was."""

    chunks: int = 0
    added: int = 0  # new or changed chunks written
    deleted: int = 0  # removed or changed chunks deleted
    unchanged: int = 0
    relabeled: int = 0  # same text, another field (filter, parent_id) changed: rewritten, not embedded
    rebuilt: str | None = None
    seconds: float = 0.0

    def as_extras(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "added": self.added, "deleted": self.deleted,
                "unchanged": self.unchanged, "relabeled": self.relabeled, "rebuilt": self.rebuilt,
                "seconds": round(self.seconds, 3)}
