"""The embedder contract. Vectors are float32 rows, L2-normalised (so cosine = dot product)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class ModelIdentity:
    """What identifies a model's vectors: its name (as the user gave it) and a hash of its files.
    Two names for the same files share ``sha256``, and so share cached vectors."""

    name: str
    sha256: str


@runtime_checkable
class Embedder(Protocol):
    def identity(self) -> ModelIdentity:
        """Cheap: must not load the model."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, normalised, in input order."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """As ``embed_documents``, with the model's query prompt where it has one."""
        ...
