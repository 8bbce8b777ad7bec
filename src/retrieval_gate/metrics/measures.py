"""The registry of measures: one ``Measure`` record per measure, the one place a measure is defined.

A record holds the canonical name (the key in every file: ``ndcg@10``), the display name, the
aliases ``--metrics`` accepts, whether it takes a cutoff (as in ir_measures: ``nDCG@10`` does,
``Rprec`` does not), whether it is on by default (an opt-in measure is computed only
when ``--metrics`` / the suite's ``metrics:`` names it, so it never appears in every comment),
trec_eval's name where there is one, and the function the metric grid (``metrics/grid.py``)
calls. The function's docstring is the formula — its first paragraph is the row of
docs/formats.md's measure table (``tests/unit/test_measure_registry.py`` checks the table against the registry).

Every function gets one ``Cut``: a case's de-duplicated ranking seen at cutoff k, through the
1-based ranks of its relevant cards within the ranking read (``positions``, ascending), ``hits``
= how many of them are ≤ k, ``n_gold`` = |G| and ``n_ranked`` = how many distinct cards were
retrieved (within the depth). A measure without a cutoff sees the whole ranking, read to its
end as trec_eval reads a run: k = the number of cards ranked, ``hits`` = every relevant card in
it. Graded gains (nDCG) get a second function, ``graded``.

Adding a measure: a function here (formula in its docstring), a ``Measure`` row in ``REGISTRY``,
its reference in tests/reference.py, its tests, a row in docs/formats.md and a CHANGELOG line —
docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple


class Cut(NamedTuple):
    """One case at cutoff ``k`` (module docstring)."""

    positions: Sequence[int]
    hits: int
    k: int
    n_gold: int
    n_ranked: int


@lru_cache(maxsize=4096)
def discount(rank: int) -> float:
    """1 / log2(rank + 1): the DCG weight of a relevant card at 1-based ``rank``."""
    return 1.0 / math.log2(rank + 1)


@lru_cache(maxsize=4096)
def ideal_dcg(n: int) -> float:
    """Σ_{i=1..n} 1/log2(i + 1): the DCG of a ranking with its n relevant cards on top."""
    return math.fsum(1.0 / math.log2(i + 2) for i in range(n))


def _precision_sum(cut: Cut) -> float:
    """Σ_{i ≤ k, rel_i = 1} precision@i, summed in rank order (the j-th relevant card at rank p
    adds j / p)."""
    total = 0.0
    for j in range(cut.hits):
        total += (j + 1) / cut.positions[j]
    return total


def hit(cut: Cut) -> float:
    """1 if hits@k > 0 else 0 — **the success signal** under disjunctive gold.

    The contract (``must_cite_one_of``) needs only one of the listed cards."""
    return 1.0 if cut.hits else 0.0


def recall(cut: Cut) -> float:
    """hits@k / \\|G\\| — a **lower bound**, see below; also Ragas' context recall.

    Under disjunctive gold, retrieving one of two acceptable cards scores 0.5 although the
    contract is met: read hit@k as the success signal."""
    return cut.hits / cut.n_gold


def ndcg(cut: Cut) -> float:
    """(Σ_{i≤k} rel_i / log2(i+1)) / IDCG@k; never above 1, even when \\|G\\| > k.

    IDCG@k = Σ_{i=1..min(k, |G|)} 1 / log2(i + 1); sums are exact (``math.fsum``), so the value
    does not depend on summation order. Graded gains: ``graded_ndcg``."""
    return math.fsum(discount(p) for p in cut.positions[:cut.hits]) / ideal_dcg(min(cut.k, cut.n_gold))


def graded_ndcg(terms: Sequence[tuple[int, float]], ideal: Sequence[float], k: int) -> float:
    """nDCG@k with graded gains (trec_eval's ``ndcg_cut``: gain = grade):
    Σ_{i ≤ k} gain_i / log2(i + 1)  /  Σ_{i ≤ k} g*_i / log2(i + 1), with ``terms`` the (rank,
    gain · discount) of the positive-gain cards and ``ideal`` the positive gains sorted
    descending; 0 when no gain is positive."""
    best = math.fsum(g * discount(i) for i, g in enumerate(ideal[:k], start=1))
    return math.fsum(t for i, t in terms if i <= k) / best if best > 0 else 0.0


def mrr(cut: Cut) -> float:
    """1 / rank of the first gold card if it is within the top k, else 0 (trec_eval's on the run
    cut at k).

    Averaged over cases: MRR@k."""
    return 1.0 / cut.positions[0] if cut.hits else 0.0


def precision(cut: Cut) -> float:
    """hits@k / k (divides by k even when fewer than k cards came back)."""
    return cut.hits / cut.k


def average_precision(cut: Cut) -> float:
    """(1/\\|G\\|) · Σ_{i≤k, rel_i=1} precision@i.

    Averaged over cases: MAP@k."""
    return _precision_sum(cut) / cut.n_gold


def context_precision(cut: Cut) -> float:
    """(Σ_{i≤k, rel_i=1} precision@i) / hits@k, 0 when hits@k = 0 — Ragas' context precision@k
    (position-weighted); = MAP@k / recall@k.

    The mean of precision@i over the ranks i ≤ k that hold a relevant card: 1 when the relevant
    cards retrieved all sit above the others, however few of the gold set they are."""
    return _precision_sum(cut) / cut.hits if cut.hits else 0.0


def context_precision_unweighted(cut: Cut) -> float:
    """hits@k / min(k, retrieved), 0 when nothing was retrieved — relevant retrieved ÷ retrieved;
    = precision@k unless fewer than k came back.

    The glossary's unweighted context precision over the top k distinct cards."""
    retrieved = min(cut.k, cut.n_ranked)
    return cut.hits / retrieved if retrieved else 0.0


def r_precision(cut: Cut) -> float:
    """hits@R / R, R = \\|G\\| (the case's relevant count) — trec_eval's R-precision, on the whole
    ranking (score reads a run to its end; eval retrieves at least R cards).

    Takes no cutoff: R is the case's own. Equals precision@R and recall@R."""
    return bisect_right(cut.positions, cut.n_gold) / cut.n_gold


@dataclass(frozen=True)
class Measure:
    """One measure (module docstring)."""

    name: str
    display: str
    value: Callable[[Cut], float]
    aliases: tuple[str, ...] = ()
    default: bool = True
    cutoff: bool = True  # takes a cutoff k (``ndcg@10``); False: named alone (``rprec``), reads the whole ranking
    # trec_eval's name: ``…_k`` = its measure at cutoff k (``P_k`` → ``P_5``); any other = its
    # measure on the run cut at k (``recip_rank``), on the whole run for one without a cutoff
    trec_eval: str | None = None
    graded: Callable[[Sequence[tuple[int, float]], Sequence[float], int], float] | None = None


REGISTRY: dict[str, Measure] = {m.name: m for m in (
    Measure("hit", "hit", hit, aliases=("hits", "hit_rate", "success"), trec_eval="success_k"),
    Measure("recall", "recall", recall, aliases=("r", "context_recall"), trec_eval="recall_k"),
    Measure("ndcg", "nDCG", ndcg, aliases=("ndcg_cut",), trec_eval="ndcg_cut_k", graded=graded_ndcg),
    Measure("mrr", "MRR", mrr, aliases=("rr", "recip_rank"), trec_eval="recip_rank"),
    Measure("precision", "precision", precision, aliases=("p",), trec_eval="P_k"),
    Measure("map", "MAP", average_precision, aliases=("map_cut", "ap"), trec_eval="map_cut_k"),
    Measure("context_precision", "context precision", context_precision, aliases=("cp",), default=False),
    Measure("context_precision_unweighted", "unweighted context precision", context_precision_unweighted,
            default=False),
    Measure("rprec", "Rprec", r_precision, aliases=("r_precision",), default=False, cutoff=False, trec_eval="Rprec"),
)}

MEASURES = tuple(REGISTRY)  # every known measure, in the order grids and tables list them
DEFAULT_MEASURES = tuple(m.name for m in REGISTRY.values() if m.default)  # computed unless --metrics names others
METRICS_HELP = (f"Measures, comma-separated (default: {','.join(DEFAULT_MEASURES)}; also: "
                f"{','.join(m for m in MEASURES if m not in DEFAULT_MEASURES)}; docs/formats.md).")
