"""The check every vector passes when it is read back from the embedding cache or the store.

A vector read back is used only when it is

- the expected dimension (the blob is exactly ``4 × dim`` bytes),
- finite (no NaN, no infinity),
- unit length: ``| ‖v‖₂ − 1 | ≤ NORM_TOLERANCE`` (the ``Embedder`` contract: L2-normalised rows;
  float32 normalisation leaves an error near 1e-7, a flipped exponent bit moves the norm by far
  more than 1e-3),
- and equal to what was written, as far as the checksum stored beside it can tell:
  - in the embedding cache (which gives back the very bytes it was given): a CRC-32 of the
    float32 bytes — every single-bit flip and every burst up to 32 bits is detected, the flips
    that keep the norm (a sign bit) included;
  - in the store (Chroma re-normalises what it stores for cosine space, so the last bit may
    differ): ``PROJECTIONS`` fixed ±1 projections of the vector, written beside it, must match
    within ``PROJECTION_TOLERANCE``. A change of one component by δ moves every projection by
    δ, so any change that could move a cosine similarity by more than the tolerance is caught
    (re-normalisation moves them by under 1e-5); the row's chunk id and card id are covered by a
    CRC-32 of their own.

Pure numpy + zlib: the callers (``embed/cache.py``, ``store/``) evict or rebuild what fails.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable

import numpy as np

NORM_TOLERANCE = 1e-3
PROJECTIONS = 2
PROJECTION_TOLERANCE = 1e-4
_WEIGHTS: dict[int, np.ndarray] = {}


def projection_weights(dim: int) -> np.ndarray:
    """``(dim, PROJECTIONS)`` fixed ±1 weights (seeded: the same on every machine and run)."""
    weights = _WEIGHTS.get(dim)
    if weights is None:
        rng = np.random.default_rng(20_240_611 + dim)
        weights = np.where(rng.random((dim, PROJECTIONS)) < 0.5, -1.0, 1.0)
        _WEIGHTS[dim] = weights
    return weights


def projections(matrix: np.ndarray) -> np.ndarray:
    """``(n, PROJECTIONS)`` float64 projections of the rows of ``matrix`` (non-finite values as 0)."""
    rows = np.asarray(matrix, dtype=np.float32)
    rows = rows.reshape(1, -1) if rows.ndim == 1 else rows
    safe = np.where(np.isfinite(rows), rows, 0.0).astype(np.float64)
    return safe @ projection_weights(rows.shape[1])


def checksum(data: bytes, *extra: str) -> int:
    """CRC-32 of ``data`` followed by each ``extra`` text (UTF-8, NUL-separated)."""
    crc = zlib.crc32(data)
    for text in extra:
        crc = zlib.crc32(b"\0" + text.encode("utf-8"), crc)
    return crc


def text_checksum(*texts: str) -> int:
    return checksum(b"", *texts)


def common_length(lengths: Iterable[int]) -> int | None:
    """The most frequent length (ties: the larger), or None for no rows: the expected dimension
    when nothing else says it."""
    counts = Counter(lengths)
    if not counts:
        return None
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def bad_rows(matrix: np.ndarray) -> np.ndarray:
    """A boolean mask of the rows of a ``(n, dim)`` float32 matrix that are not finite or not
    unit length. Computed in float64 so a huge value cannot overflow into a false pass."""
    if matrix.size == 0:
        return np.zeros(matrix.shape[0], dtype=bool)
    finite = np.isfinite(matrix).all(axis=1)
    safe = np.where(np.isfinite(matrix), matrix, 0.0).astype(np.float64, copy=False)
    norms = np.sqrt(np.einsum("ij,ij->i", safe, safe))
    return ~finite | (np.abs(norms - 1.0) > NORM_TOLERANCE)


def vector_ok(vector: np.ndarray, *, dim: int | None) -> bool:
    """One vector: the expected dimension, finite, unit length."""
    row = np.asarray(vector, dtype=np.float32).reshape(1, -1)
    if dim is not None and row.shape[1] != dim:
        return False
    return not bool(bad_rows(row)[0])
