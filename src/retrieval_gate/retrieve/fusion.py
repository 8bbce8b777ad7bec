"""Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009). Pure.

    score(d) = Σ_lanes 1 / (rrf_k + rank_lane(d))      rank starts at 1; a lane that misses d adds 0

Only ranks matter, never the lanes' raw scores (a cosine of 0.98 and a BM25 score of 17.4 are
not comparable; RRF never needs them to be). ``rrf_k = 60`` is the paper's default (the paper's
``k``; named ``rrf_k`` here so it is never confused with the cutoff k).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

Id = TypeVar("Id", bound=Hashable)

DEFAULT_RRF_K = 60


def rrf(rankings: Sequence[Sequence[Id]], rrf_k: float = DEFAULT_RRF_K) -> list[tuple[Id, float]]:
    """Fuse ranked lanes into ``[(id, score), …]``, best first.

    Ties keep first-seen order (lane order, then rank), as a stable sort of the reference
    implementation does. Raises ``ValueError`` when ``rrf_k ≤ 0`` or when one lane lists an id twice
    (a lane must not vote twice for one document — de-duplicate card ids first).
    """
    if rrf_k <= 0:
        raise ValueError("rrf_k must be positive")
    scores: dict[Id, float] = {}
    for lane, ranking in enumerate(rankings):
        if len(ranking) != len(set(ranking)):
            seen: set[Id] = set()
            dup = next(d for d in ranking if d in seen or seen.add(d))
            raise ValueError(f"each ranking must contain unique ids: lane {lane} lists {dup!r} twice")
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
