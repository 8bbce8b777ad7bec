"""Reference implementations the tests and benchmarks check the tool against, or normalise its output
with; nothing in ``src/`` calls them.

- the paired percentile bootstrap the comparison used before its intervals became Tango's score
  interval and the paired t interval (``bootstrap_means``, ``bootstrap_ci``, ``paired_bootstrap_ci``,
  ``paired_stats``): the calibration benchmark's reference interval; it draws from the first of the
  two streams ``stats.sign_flip`` spawns from a seed;
- the exact Jaccard similarity the MinHash estimate is checked against (``jaccard``);
- every measure written from its definition, one function each (``FUNCTIONS``: ``hit_at_k`` …
  ``context_precision_at_k``), and graded nDCG@k (``graded_ndcg_at_k``), which the metric grid
  is checked against (``==``) and, with them, pytrec_eval;
- one case's scores straight from the metric grid (``case_scores``), compared with pytrec_eval;
- what two runs of the same inputs may differ in, dropped (``without_run_specific_fields``,
  ``without_timings``), so runs compare byte for byte;
- the side-by-side table as Markdown for the docs (``side_by_side_markdown``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval_gate.compare.gate import format_p
from retrieval_gate.compare.side_by_side import RetrieverCell, SideBySide
from retrieval_gate.defaults import DEFAULT_RESAMPLES
from retrieval_gate.metrics import MetricSpec, parse_metric
from retrieval_gate.metrics.grid import grid_scores
from retrieval_gate.render.fmt import signed
from retrieval_gate.render.side_by_side import _timing, _value
from retrieval_gate.stats.sign_flip import _as_matrix, _chunk_rows, _streams, _unique_rows, sign_flip_tests

MULTINOMIAL_COST = 8  # a multinomial category costs about as much as this many index draws
GATHER_MAX_COLUMNS = 2  # up to this many metrics, sum the drawn values directly (no count matrix)


@dataclass(frozen=True)
class PairedStat:
    """Δ with its uncertainty for one metric over n paired cases."""

    n: int
    delta: float
    ci: tuple[float, float]
    p_value: float
    p_method: str  # "exact" | "binomial" | "monte-carlo"



def bootstrap_means(diffs: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """``R × M`` matrix of bootstrap means ``Δ*`` (see the module docstring).

    Only cases with a non-zero difference move a resampled sum, so each resample first draws how
    many of its n picks land on the m changed cases (``K ~ Bin(n, m/n)``), then which ones (K
    uniform picks among them) — the same law as n uniform picks among all n cases, with m/n of
    the work. When the changed cases have few distinct difference rows, the counts per distinct
    row are drawn at once from the multinomial law instead."""
    d = _as_matrix(diffs)
    n, m_cols = d.shape
    if n == 0:
        raise ValueError("no paired cases")
    if resamples < 1:
        raise ValueError("resamples must be ≥ 1")
    rng, _ = _streams(seed)
    out = np.zeros((resamples, m_cols))
    changed = d[np.any(d != 0.0, axis=1)]
    m = len(changed)
    if m == 0:
        return out
    rows, multiplicity = _unique_rows(changed)
    if (len(rows) + 1) * MULTINOMIAL_COST <= m:
        probs = np.append(multiplicity, n - m) / n  # the last cell: the unchanged cases
        chunk = _chunk_rows(len(rows) + 1)
        for start in range(0, resamples, chunk):
            count = min(chunk, resamples - start)
            draws = rng.multinomial(n, probs, size=count)[:, :-1]
            out[start:start + count] = draws.astype(np.float64) @ rows
        return out / n
    chunk = _chunk_rows(m)
    for start in range(0, resamples, chunk):
        count = min(chunk, resamples - start)
        picks = rng.binomial(n, m / n, size=count)
        owner = np.repeat(np.arange(count), picks)
        which = rng.integers(0, m, size=int(picks.sum()))
        if m_cols <= GATHER_MAX_COLUMNS:
            for j in range(m_cols):
                out[start:start + count, j] = np.bincount(owner, weights=changed[which, j], minlength=count)
            continue
        counts = np.bincount(owner * m + which, minlength=count * m).reshape(count, m)
        out[start:start + count] = counts.astype(np.float64) @ changed
    return out / n



def bootstrap_ci(
    diffs: np.ndarray, *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> np.ndarray:
    """Percentile bootstrap CI of the mean difference: ``M × 2`` array of ``[low, high]``."""
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    means = bootstrap_means(diffs, resamples=resamples, seed=seed)
    tail = (1 - level) / 2
    return np.quantile(means, [tail, 1 - tail], axis=0).T



def paired_bootstrap_ci(
    diffs: np.ndarray | list[float], *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """One metric: ``(low, high)`` of the paired bootstrap CI of mean(d)."""
    low, high = bootstrap_ci(_as_matrix(diffs), level=level, resamples=resamples, seed=seed)[0]
    return float(low), float(high)



def paired_stats(
    diffs: np.ndarray, *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> list[PairedStat]:
    """Δ, CI and p for each column of an ``n × M`` matrix of paired differences (n ≥ 1)."""
    d = _as_matrix(diffs)
    n = d.shape[0]
    ci = bootstrap_ci(d, level=level, resamples=resamples, seed=seed)
    p, methods = sign_flip_p_values(d, resamples=resamples, seed=seed)
    deltas = [math.fsum(d[:, j].tolist()) / n for j in range(d.shape[1])]
    return [
        PairedStat(n=n, delta=deltas[j], ci=(float(ci[j, 0]), float(ci[j, 1])), p_value=float(p[j]),
                   p_method=methods[j])
        for j in range(d.shape[1])
    ]



def hit_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """hit@k = 1 if any gold card is among the first k ranked cards, else 0."""
    return 1.0 if any(d in gold for d in ranked[:k]) else 0.0


def recall_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """recall@k = |gold ∩ top-k| / |gold|   (trec_eval ``recall_k``)."""
    return sum(1 for d in ranked[:k] if d in gold) / len(gold)


def ndcg_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """nDCG@k with binary gain (trec_eval ``ndcg_cut_k``), sums exact (``math.fsum``)."""
    dcg = math.fsum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    idcg = math.fsum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / idcg


def precision_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """precision@k = |gold ∩ top-k| / k   (trec_eval ``P_k``)."""
    return sum(1 for d in ranked[:k] if d in gold) / k


def mrr_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """1 / rank of the first gold card within the top k, else 0."""
    for rank, d in enumerate(ranked[:k], start=1):
        if d in gold:
            return 1.0 / rank
    return 0.0


def average_precision_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """AP@k = (1 / |gold|) · Σ_{i ≤ k, rel_i = 1} precision@i   (trec_eval ``map_cut_k``)."""
    found = 0
    total = 0.0
    for i, d in enumerate(ranked[:k], start=1):
        if d in gold:
            found += 1
            total += found / i
    return total / len(gold)


def context_precision_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """Ragas' context precision@k, from its definition: the precision@i at each rank i ≤ k that
    holds a relevant card, summed, over the number of relevant cards in the top k (0 if none)."""
    top = ranked[:k]
    at_relevant = [sum(1 for d in top[:i] if d in gold) / i for i in range(1, len(top) + 1) if top[i - 1] in gold]
    total = 0.0
    for value in at_relevant:
        total += value
    return total / len(at_relevant) if at_relevant else 0.0


def context_precision_unweighted_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """Relevant retrieved ÷ retrieved, over the top k distinct cards (0 when nothing came back)."""
    top = ranked[:k]
    return sum(1 for d in top if d in gold) / len(top) if top else 0.0


def r_precision(ranked: Sequence[str], gold: Set[str], depth: int) -> float:
    """R-precision (trec_eval ``Rprec``): the gold cards among the first R = |gold| ranked cards,
    over R, on the ranking read to ``depth`` (a measure without a cutoff reads the whole ranking)."""
    top = ranked[:depth][:len(gold)]
    return sum(1 for d in top if d in gold) / len(gold)


FUNCTIONS = {"hit": hit_at_k, "recall": recall_at_k, "ndcg": ndcg_at_k, "mrr": mrr_at_k, "precision": precision_at_k,
             "map": average_precision_at_k, "context_precision": context_precision_at_k,
             "context_precision_unweighted": context_precision_unweighted_at_k, "rprec": r_precision}


def graded_ndcg_at_k(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """nDCG@k with the grade as gain, as trec_eval ``ndcg_cut_k`` (and pytrec_eval).

    DCG@k  = Σ_{i=1..k} max(g_i, 0) / log2(i + 1),  g_i = the grade of the i-th card (0 unjudged)
    IDCG@k = Σ_{i=1..k} g*_i / log2(i + 1),  g* = the positive grades sorted descending
    nDCG@k = DCG@k / IDCG@k, and 0 when no grade is positive. Negative grades gain nothing.
    """
    dcg = math.fsum(max(gains.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = math.fsum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def sign_flip_p_values(
    diffs: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, monte_carlo: bool = True,
) -> tuple[np.ndarray, list[str]]:
    """Two-sided paired sign-flip p-value per column, and how each was computed ("exact" or
    "monte-carlo"). ``monte_carlo=False``: a column whose law is too large to enumerate gets NaN
    (the caller estimates it otherwise)."""
    tests = sign_flip_tests(diffs, resamples=resamples, seed=seed, monte_carlo=monte_carlo)
    return tests.two_sided, tests.methods


def sign_flip_p_value(diffs: np.ndarray | list[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> float:
    """One metric: the two-sided paired sign-flip p-value of mean(d) = 0 (``stats.paired`` in
    the package)."""
    p, _ = sign_flip_p_values(_as_matrix(diffs), resamples=resamples, seed=seed)
    return float(p[0])


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard similarity of two sorted distinct hash arrays (1.0 for two empty sets)."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)



def case_scores(ranked: Sequence[str], gold: Sequence[str], metrics: Sequence[MetricSpec]) -> dict[str, float]:
    """Score one de-duplicated card ranking. Empty gold → no keys at all (the empty-gold contract, docs/decisions.md).

    Values equal ``FUNCTIONS[measure](ranked, set(gold), k)`` (above) exactly; they are computed
    in one pass by ``metrics.grid.grid_scores``."""
    if not gold or not metrics:
        return {}
    return grid_scores(ranked, frozenset(gold), metrics)



def without_run_specific_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A results file's data without what two evals of the same inputs may differ in — when
    (``created_at``), how fast (``latency``, ``cases[].latency_ms``, ``extras.timings``,
    ``extras.store.seconds``) and what was embedded where (``extras.embedding``: a sharded run
    embedded nothing itself) — so runs can be compared byte for byte. ``data`` is not changed."""
    out = {key: value for key, value in data.items() if key not in ("created_at", "latency")}
    out["cases"] = [{k: v for k, v in case.items() if k != "latency_ms"} for case in data.get("cases", [])]
    extras = {k: v for k, v in data.get("extras", {}).items() if k not in ("timings", "embedding")}
    if isinstance(extras.get("store"), dict):
        extras["store"] = {k: v for k, v in extras["store"].items() if k != "seconds"}
    out["extras"] = extras
    return out



def without_timings(sweep: Mapping[str, Any]) -> dict[str, Any]:
    """``sweep.json`` without its one run-specific figure, ``cost.seconds`` (points and curves):
    what two runs of the same sweep — on one machine or merged from shards — agree on byte for byte."""
    out = copy.deepcopy(dict(sweep))
    for point in out["points"]:
        point["cost"].pop("seconds", None)
    for curve in out["curves"].values():
        for item in curve["points"]:
            item["cost"].pop("seconds", None)
    return out



def _delta(cell: RetrieverCell) -> str:
    if cell.delta is None:
        return ""
    text = str(signed(cell.delta))
    if cell.ci is not None:
        text += f" [{signed(cell.ci[0])}, {signed(cell.ci[1])}]"
    if cell.p_value is not None:
        p = format_p(cell.p_value)
        text += f" p{p}" if p.startswith("<") else f" p={p}"
    return text


def side_by_side_markdown(sbs: SideBySide) -> str:
    """A GitHub-flavoured Markdown table (used in the benchmarks and the docs)."""
    head = ["retriever", "n"] + [parse_metric(m).display for m in sbs.metrics] + \
        [f"Δ{parse_metric(m).display} vs {sbs.reference}" for m in sbs.metrics] + ["failed", "search"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in sbs.rows:
        n = max((c.n for c in row.cells.values()), default=0)
        values = [_value(row.cells[m]) for m in sbs.metrics]
        deltas = [_delta(row.cells[m]) or ("ref" if row.retriever == sbs.reference else "–") for m in sbs.metrics]
        lines.append("| " + " | ".join([f"`{row.retriever}`", str(n), *values, *deltas, str(row.failed),
                                        _timing(row)]) + " |")
    return "\n".join(lines) + "\n"
