"""MinHash signatures and LSH candidate pairs over shingle-hash sets, with datasketch.

Shingles arrive already hashed (``text.py``); datasketch's ``update_batch`` is given an identity
hash function, and every signature shares one set of permutations (drawn from ``seed``), so
signatures are deterministic and comparable. ``similar_pairs`` returns every pair whose MinHash
Jaccard estimate is ≥ ``threshold``: LSH proposes candidates, the estimate confirms them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

SCHEME = "affine32"  # datasketch 2 default; 32-bit shingle hashes in, collision-free permutations


def _identity(value: int) -> int:
    return value


def signatures(shingles: Sequence[np.ndarray], *, num_perm: int, seed: int) -> list[LeanMinHash | None]:
    """One signature per shingle set; ``None`` for an empty set (nothing to compare)."""
    template = MinHash(num_perm=num_perm, seed=seed, hashfunc=_identity, scheme=SCHEME)
    permutations = template.permutations
    out: list[LeanMinHash | None] = []
    for values in shingles:
        if len(values) == 0:
            out.append(None)
            continue
        m = MinHash(num_perm=num_perm, seed=seed, hashfunc=_identity, permutations=permutations,
                    scheme=SCHEME)
        m.update_batch(values)
        out.append(LeanMinHash(m))
    return out


def similar_pairs(
    sigs: Sequence[LeanMinHash | None], *, threshold: float, num_perm: int
) -> list[tuple[int, int, float]]:
    """``(i, j, estimate)`` with i < j for every pair estimated at Jaccard ≥ ``threshold``,
    sorted. Positions index ``sigs``."""
    lsh = MinHashLSH(threshold=min(threshold, 0.999), num_perm=num_perm)
    with lsh.insertion_session() as session:
        for i, sig in enumerate(sigs):
            if sig is not None:
                session.insert(i, sig, check_duplication=False)
    pairs: list[tuple[int, int, float]] = []
    for i, sig in enumerate(sigs):
        if sig is None:
            continue
        for j in lsh.query(sig):
            if j <= i:
                continue
            other = sigs[j]
            assert other is not None
            estimate = float(np.count_nonzero(sig.hashvalues == other.hashvalues)) / num_perm
            if estimate >= threshold:
                pairs.append((i, j, estimate))
    pairs.sort()
    return pairs


def components(n: int, pairs: Sequence[tuple[int, int, float]]) -> list[list[int]]:
    """Connected components (size ≥ 2) of the pair graph over 0..n-1, each sorted, in order of
    their smallest member."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j, _ in pairs:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for x in range(n):
        groups.setdefault(find(x), []).append(x)
    return [members for _, members in sorted(groups.items()) if len(members) >= 2]
