"""A fake of OUR Embedder interface (embed/base.py): hashed bag of words, normalised.

Texts sharing words get similar vectors, so retrieval over it is meaningful and predictable,
and it counts what it was asked to embed (to check the cache and incremental sync)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from retrieval_gate.embed.base import ModelIdentity

DIM = 256


def bag_of_words(text: str, dim: int = DIM) -> np.ndarray:
    vec = np.zeros(dim, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = float(np.linalg.norm(vec))
    if norm == 0:
        vec[0] = 1.0
        return vec
    return vec / norm


class HashEmbedder:
    def __init__(self, name: str = "fake-bow", sha256: str = "f" * 64, dim: int = DIM):
        self.name = name
        self.sha256 = sha256
        self.dim = dim
        self.documents: list[str] = []
        self.queries: list[str] = []

    def identity(self) -> ModelIdentity:
        return ModelIdentity(name=self.name, sha256=self.sha256)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents.extend(texts)
        return np.stack([bag_of_words(t, self.dim) for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries.extend(texts)
        return np.stack([bag_of_words(t, self.dim) for t in texts])
