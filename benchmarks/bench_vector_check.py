"""What the read-back check of every vector costs at 200,000 chunks (384 dimensions, the bundled
model's): synthetic unit vectors, the check code itself, median of 5 runs each.

1. The store rows (``store/verify.py:bad_in_page``, page by page as ``read_verified`` calls it):
   id/card CRC-32, two ±1 projections against the values stored beside the row, dimension,
   finite, unit norm. Chroma's own ``get`` of the rows is not included: exact search reads them
   anyway (the cost curve in docs/performance.md), only the check is new.
2. The embedding cache rows (``embed/cache.py:_checked``): CRC-32 of each blob, dimension,
   finite, unit norm.
3. The HNSW level-0 file check run before chromadb opens a persistent store
   (``store/folder.py:_level0_damage``) on a synthetic file of the same layout (M0 = 32).

Usage: python benchmarks/bench_vector_check.py [N]   (N chunks, default 200000; ≈1 min)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from retrieval_gate.embed.cache import _checked
from retrieval_gate.embed.check import checksum
from retrieval_gate.store.folder import _level0_damage
from retrieval_gate.store.verify import PAGE, bad_in_page, row_checks

DIM = 384


def timed(work, repeats: int = 5) -> float:
    runs = []
    for _ in range(repeats):
        began = time.perf_counter()
        work()
        runs.append(time.perf_counter() - began)
    return statistics.median(runs)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"card-{i:06d}#0" for i in range(n)]
    cards = [f"card-{i:06d}" for i in range(n)]
    metas = [{"parent_id": card, **check} for card, check in zip(cards, row_checks(vectors, ids, cards), strict=True)]
    pages = [(ids[i:i + PAGE], metas[i:i + PAGE], list(vectors[i:i + PAGE])) for i in range(0, n, PAGE)]

    def store_check() -> None:
        bad = sum(int(bad_in_page(i, m, r, dim=DIM).sum()) for i, m, r in pages)
        assert bad == 0

    blobs = [v.tobytes() for v in vectors]
    rows = [(f"{i:064x}", blob, checksum(blob)) for i, blob in enumerate(blobs)]

    def cache_check() -> None:
        good, bad = _checked(rows, dim=DIM)
        assert not bad and len(good) == n

    max_m0, data_offset = 32, 4 + 4 * 32
    label_offset = data_offset + 4 * DIM
    per_element = label_offset + 8
    level0 = np.zeros((n, per_element), dtype=np.uint8)
    level0[:, data_offset:label_offset] = vectors.view(np.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "data_level0.bin"
        level0.tofile(file)
        del level0

        def hnsw_check() -> None:
            assert _level0_damage(file, count=n, per_element=per_element, data_offset=data_offset,
                                  label_offset=label_offset, max_m0=max_m0) is None

        figures = {"store rows": timed(store_check), "cache rows": timed(cache_check),
                   "HNSW level-0 file": timed(hnsw_check)}
    print(f"read-back check of {n:,} vectors × {DIM} dims (median of 5, seconds):")
    for name, seconds in figures.items():
        print(f"  {name:<18} {seconds:7.3f} s   ({seconds / n * 1e6:.2f} µs per vector)")


if __name__ == "__main__":
    main()
