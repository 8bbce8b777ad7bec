"""The hot path: every metric of a grid for one case, from the gold cards' ranks, in one pass.

The reference definitions are the one-function-per-measure modules next to this one; this module
computes exactly the same floats (the same operations in the same order; ``math.fsum`` for nDCG's
sums) from the 1-based ranks of the gold cards within the top ``max(k)``:

    positions = [i for i, card in enumerate(ranked[:max_k], 1) if card in gold]
    hits@k    = |{p ∈ positions : p ≤ k}|                     (a prefix of positions)
    hit@k = [hits@k > 0]      recall@k = hits@k / |gold|       precision@k = hits@k / k
    mrr@k = 1 / positions[0] if hits@k > 0 else 0
    nDCG@k = Σ_{p ≤ k} 1/log2(p + 1)  /  Σ_{i=1..min(k,|gold|)} 1/log2(i + 1)
    AP@k  = (1/|gold|) · Σ_{j-th gold card at rank p ≤ k} j / p

With graded gains (``gains``: card → grade > 0, trec_eval's ``ndcg_cut``), the binary measures
still come from the ranks of the relevant cards, and nDCG from the gains, in one more pass over
the top ``max(k)`` (``graded_ndcg``; the reference is ``graded_ndcg_at_k`` in tests/reference.py):

    nDCG@k = Σ_{i ≤ k} gain(ranked_i) / log2(i + 1)  /  Σ_{i ≤ k} g*_i / log2(i + 1)
    g* = the positive gains sorted descending; 0 when no gain is positive

``tests/unit/test_metrics_pytrec.py`` checks equality (``==``, not approximately) with the
reference functions on random rankings, and both against pytrec_eval.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence, Set
from functools import lru_cache

from retrieval_gate.metrics.names import MEASURES, MetricSpec


@lru_cache(maxsize=4096)
def discount(rank: int) -> float:
    """1 / log2(rank + 1): the DCG weight of a relevant card at 1-based ``rank``."""
    return 1.0 / math.log2(rank + 1)


@lru_cache(maxsize=4096)
def ideal_dcg(n: int) -> float:
    """Σ_{i=1..n} 1/log2(i + 1): the DCG of a ranking with its n relevant cards on top."""
    return math.fsum(1.0 / math.log2(i + 2) for i in range(n))


# One row per cutoff: (k, name of hit@k, recall@k, precision@k, mrr@k, ndcg@k, map@k); a name is
# None where that measure is not asked for at this k.
_Row = tuple[int, str | None, str | None, str | None, str | None, str | None, str | None]
_ROW_ORDER = ("hit", "recall", "precision", "mrr", "ndcg", "map")


class CompiledGrid(tuple[MetricSpec, ...]):
    """A metric grid (a tuple of MetricSpec) with its per-cutoff plan worked out once."""

    depth: int
    ks: tuple[int, ...]
    rows: tuple[_Row, ...]
    zeros: dict[str, float]
    memo: dict[tuple[int, tuple[int, ...]], dict[str, float]]

    def __new__(cls, metrics: Iterable[MetricSpec]) -> CompiledGrid:
        grid = super().__new__(cls, metrics)
        by_k: dict[int, dict[str, str]] = {}
        for spec in grid:
            if spec.measure not in MEASURES:
                raise ValueError(f"unknown measure {spec.measure!r}")
            by_k.setdefault(spec.k, {})[spec.measure] = spec.name
        grid.depth = max(by_k, default=0)
        grid.ks = tuple(sorted(by_k))
        grid.rows = tuple(
            (k, *(names.get(m) for m in _ROW_ORDER)) for k, names in sorted(by_k.items())
        )
        # Same key order as grid_scores builds, so aggregation can transpose all rows together.
        grid.zeros = {name: 0.0 for row in grid.rows for name in row[1:] if name}
        grid.memo = {}
        return grid


def compile_grid(metrics: Sequence[MetricSpec]) -> CompiledGrid:
    return metrics if isinstance(metrics, CompiledGrid) else CompiledGrid(metrics)


def gold_positions(ranked: Sequence[str], gold: Set[str], depth: int) -> list[int]:
    """1-based ranks of the gold cards within the first ``depth`` cards, ascending."""
    return [i for i, card in enumerate(ranked[:depth], start=1) if card in gold]


_MEMO_MAX = 1 << 16


def grid_scores(ranked: Sequence[str], gold: Set[str], metrics: Sequence[MetricSpec],
                gains: Mapping[str, float] | None = None) -> dict[str, float]:
    """``{metric name: value}`` for one de-duplicated card ranking and a gold set (non-empty
    unless ``gains`` is given: a judged case with nothing relevant scores 0 on every binary
    measure). ``gains``: graded nDCG gains (see the module docstring); None = binary gains.

    The binary values depend only on (|gold|, positions), which few patterns cover in practice,
    so a compiled grid memoises them (bounded); the caller always gets its own dict."""
    grid = compile_grid(metrics)
    if gains is not None:
        out = grid_scores(ranked, gold, grid) if gold else dict(grid.zeros)
        out.update(graded_ndcg(grid, ranked, gains))
        return out
    positions = gold_positions(ranked, gold, grid.depth)
    if not positions:
        return dict(grid.zeros)
    key = (len(gold), tuple(positions))
    cached = grid.memo.get(key)
    if cached is None:
        cached = scores_from_positions(grid, positions, len(gold))
        if len(grid.memo) < _MEMO_MAX:
            grid.memo[key] = cached
    return dict(cached)


def graded_ndcg(grid: CompiledGrid, ranked: Sequence[str], gains: Mapping[str, float]) -> dict[str, float]:
    """Every nDCG@k of the grid with graded gains, from one pass over the top ``grid.depth``."""
    names = [(row[0], row[5]) for row in grid.rows if row[5]]
    if not names:
        return {}
    terms = [(i, gains[card] * discount(i)) for i, card in enumerate(ranked[:grid.depth], start=1)
             if gains.get(card, 0) > 0]
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)
    out: dict[str, float] = {}
    for k, name in names:
        best = math.fsum(g * discount(i) for i, g in enumerate(ideal[:k], start=1))
        out[name] = math.fsum(t for i, t in terms if i <= k) / best if best > 0 else 0.0
    return out


def scores_from_positions(grid: CompiledGrid, positions: Sequence[int], n_gold: int) -> dict[str, float]:
    """The grid's values from the ascending 1-based gold ranks within the top ``grid.depth``."""
    out: dict[str, float] = {}
    # Running sums over the prefix positions[:hits]; hits only grows with k.
    done = 0
    ap_total = 0.0
    dcg_hits = -1
    dcg = 0.0
    for k, hit_n, recall_n, precision_n, mrr_n, ndcg_n, map_n in grid.rows:
        hits = bisect_right(positions, k)
        if hit_n:
            out[hit_n] = 1.0 if hits else 0.0
        if recall_n:
            out[recall_n] = hits / n_gold
        if precision_n:
            out[precision_n] = hits / k
        if mrr_n:
            out[mrr_n] = 1.0 / positions[0] if hits else 0.0
        if ndcg_n:
            if hits != dcg_hits:
                dcg = math.fsum(discount(p) for p in positions[:hits])
                dcg_hits = hits
            out[ndcg_n] = dcg / ideal_dcg(min(k, n_gold))
        if map_n:
            while done < hits:
                done += 1
                ap_total += done / positions[done - 1]
            out[map_n] = ap_total / n_gold
    return out
