"""The hot path: every measure of a grid for one case, from the relevant cards' ranks, in one pass.

The measures are the records of ``metrics/measures.py:REGISTRY``; this module calls each one's
function once per cutoff, with the case at that cutoff (``measures.Cut``) worked out from the
1-based ranks of the gold cards within the top ``max(k)``:

    positions = [i for i, card in enumerate(ranked[:max_k], 1) if card in gold]
    hits@k    = |{p ∈ positions : p ≤ k}|                     (a prefix of positions)

A measure without a cutoff (``Measure.cutoff`` False: R-precision) is called once, with the
**whole ranking it is given**, read to its end as trec_eval reads a run (``CompiledGrid.whole``):
``score`` hands it the run file's whole ranking, ``eval`` retrieves at least R cards for each case
(``evaluation/run.py``). Its ``Cut`` has k = the number of cards ranked. The measures with a
cutoff read the top ``depth`` = the grid's largest cutoff, the suite's largest k.

With graded gains (``gains``: card → grade > 0, trec_eval's ``ndcg_cut``), the binary measures
still come from the ranks of the relevant cards, and a measure with a ``graded`` function (nDCG)
from the gains, in one more pass over the top ``max(k)`` (the reference is ``graded_ndcg_at_k``
in tests/reference.py).

``tests/unit/test_metrics_pytrec.py`` checks equality (``==``, not approximately) with the
reference functions in tests/reference.py on random rankings, and both against pytrec_eval.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence, Set

from retrieval_gate.metrics.measures import DEFAULT_MEASURES, REGISTRY, Cut, Measure, discount
from retrieval_gate.metrics.names import MetricSpec

# One row per cutoff: (k, ((name, measure), …)) for the measures asked for at this k, in the
# registry's order; k None: the measures without a cutoff, last.
_Row = tuple[int | None, tuple[tuple[str, Measure], ...]]


class CompiledGrid(tuple[MetricSpec, ...]):
    """A metric grid (a tuple of MetricSpec) with its per-cutoff plan worked out once. ``ks``: the
    suite's cutoffs, when the grid has measures without one (they read the top ``max(ks)``)."""

    depth: int
    whole: bool  # some measure has no cutoff: the ranking is read to its end
    ks: tuple[int, ...]
    rows: tuple[_Row, ...]
    zeros: dict[str, float]
    memo: dict[tuple[int, tuple[int, ...]], dict[str, float]]

    def __new__(cls, metrics: Iterable[MetricSpec], ks: Iterable[int] = ()) -> CompiledGrid:
        grid = super().__new__(cls, metrics)
        by_k: dict[int | None, dict[str, str]] = {}
        for spec in grid:
            measure = REGISTRY.get(spec.measure)
            if measure is None:
                raise ValueError(f"unknown measure {spec.measure!r}")
            if measure.cutoff != (spec.k is not None):
                raise ValueError(f"{spec.name}: {measure.display} {'takes' if measure.cutoff else 'takes no'} cutoff")
            by_k.setdefault(spec.k, {})[spec.measure] = spec.name
        grid.ks = tuple(sorted({*ks, *(k for k in by_k if k is not None)}))
        grid.depth = max(grid.ks, default=0)
        grid.whole = None in by_k
        if None in by_k and not grid.depth:
            raise ValueError("a grid with a measure without a cutoff needs the suite's cutoffs too "
                             "(the ranking kept, unjudged@k)")
        grid.rows = tuple((k, tuple((names[m], measure) for m, measure in REGISTRY.items() if m in names))
                          for k, names in sorted(by_k.items(), key=lambda item: (item[0] is None, item[0] or 0)))
        # Same key order as grid_scores builds, so aggregation can transpose all rows together.
        grid.zeros = {name: 0.0 for _k, row in grid.rows for name, _m in row}
        grid.memo = {}
        return grid

    def __getnewargs__(self) -> tuple[tuple[MetricSpec, ...], tuple[int, ...]]:
        """Copied and pickled with its cutoffs (a measure without one needs them)."""
        return tuple(self), self.ks


def compile_grid(metrics: Sequence[MetricSpec], ks: Iterable[int] = ()) -> CompiledGrid:
    """``metrics`` compiled (as they are when they already are); ``ks``: ``CompiledGrid``."""
    return metrics if isinstance(metrics, CompiledGrid) else CompiledGrid(metrics, ks)


def metric_specs(ks: tuple[int, ...], measures: tuple[str, ...] = DEFAULT_MEASURES) -> CompiledGrid:
    """Every measure (default: the default set) at every cutoff — once for a measure without
    one —, in a stable order (measure order, then k), compiled with the cutoffs ``ks``."""
    specs = (MetricSpec(m, k) for m in measures for k in (ks if REGISTRY[m].cutoff else (None,)))
    return CompiledGrid(specs, ks)


def gold_positions(ranked: Sequence[str], gold: Set[str], depth: int) -> list[int]:
    """1-based ranks of the gold cards within the first ``depth`` cards, ascending."""
    return [i for i, card in enumerate(ranked[:depth], start=1) if card in gold]


_MEMO_MAX = 1 << 16


def grid_scores(ranked: Sequence[str], gold: Set[str], metrics: Sequence[MetricSpec],
                gains: Mapping[str, float] | None = None) -> dict[str, float]:
    """``{metric name: value}`` for one de-duplicated card ranking and a gold set (non-empty
    unless ``gains`` is given: a judged case with nothing relevant scores 0 on every binary
    measure). ``gains``: graded nDCG gains (see the module docstring); None = binary gains.

    The binary values depend only on (|gold|, cards retrieved within the depth, positions), which
    few patterns cover in practice, so a compiled grid memoises them (bounded); the caller always gets its own dict."""
    grid = compile_grid(metrics)
    if gains is not None:
        out = grid_scores(ranked, gold, grid) if gold else dict(grid.zeros)
        out.update(graded_ndcg(grid, ranked, gains))
        return out
    n_ranked = len(ranked) if grid.whole else min(len(ranked), grid.depth)
    positions = gold_positions(ranked, gold, n_ranked)
    if not positions:
        return dict(grid.zeros)
    key = (len(gold), n_ranked, tuple(positions))
    cached = grid.memo.get(key)
    if cached is None:
        cached = scores_from_positions(grid, positions, n_gold=len(gold), n_ranked=n_ranked)
        if len(grid.memo) < _MEMO_MAX:
            grid.memo[key] = cached
    return dict(cached)


def graded_ndcg(grid: CompiledGrid, ranked: Sequence[str], gains: Mapping[str, float]) -> dict[str, float]:
    """Every graded measure of the grid (nDCG@k) with graded gains, from one pass over the top
    ``grid.depth``."""
    wanted = [(grid.depth if k is None else k, name, measure.graded) for k, row in grid.rows
              for name, measure in row if measure.graded]
    if not wanted:
        return {}
    terms = [(i, gains[card] * discount(i)) for i, card in enumerate(ranked[:grid.depth], start=1)
             if gains.get(card, 0) > 0]
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)
    return {name: graded(terms, ideal, k) for k, name, graded in wanted}


def scores_from_positions(grid: CompiledGrid, positions: Sequence[int], *, n_gold: int,
                          n_ranked: int) -> dict[str, float]:
    """The grid's values from the ascending 1-based gold ranks within the top ``n_ranked`` cards
    (the whole ranking when ``grid.whole``, else at most ``grid.depth``): a measure without a
    cutoff sees them all, k = ``n_ranked``; one with cutoff k the ranks ≤ k."""
    out: dict[str, float] = {}
    shown = min(n_ranked, grid.depth)
    for k, row in grid.rows:
        cut = (Cut(positions, len(positions), n_ranked, n_gold, n_ranked) if k is None
               else Cut(positions, bisect_right(positions, k), k, n_gold, shown))
        for name, measure in row:
            out[name] = measure.value(cut)
    return out


# --- Ranking hygiene --------------------------------------------------------------------------
# Ranking hygiene applied before any metric: card identity and first-occurrence de-duplication.

def dedupe_first(ids: Iterable[str]) -> tuple[str, ...]:
    """Keep each id at its first position: a repeated card never counts twice and never hides
    a later card (docs/decisions.md, "De-duplication before the cut")."""
    return tuple(dict.fromkeys(ids))


def to_cards(
    ids: Sequence[str], chunk_to_card: Mapping[str, str] | None, limit: int | None = None
) -> tuple[str, ...]:
    """Map chunk ids to card ids (ids unknown to the map are kept as they are), then de-duplicate.

    ``limit``: return only the first ``limit`` distinct cards — the same prefix as without it,
    computed without de-duplicating the whole (possibly over-fetched) ranking."""
    if limit is None or limit >= len(ids):
        return _cards(ids, chunk_to_card)
    window = max(limit, 1)
    while True:
        cards = _cards(ids[:window], chunk_to_card)
        if len(cards) >= limit or window >= len(ids):
            return cards[:limit]
        window *= 2


def _cards(ids: Iterable[str], chunk_to_card: Mapping[str, str] | None) -> tuple[str, ...]:
    if chunk_to_card is None:
        return dedupe_first(ids)
    return dedupe_first(chunk_to_card.get(i, i) for i in ids)
