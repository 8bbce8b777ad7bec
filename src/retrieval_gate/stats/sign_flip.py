"""Paired sign-flip permutation p-values for a mean difference.

Input: paired differences ``d_i = current_i − baseline_i`` over the n cases present in both runs,
as a vector (one metric) or an ``n × M`` matrix (M metrics over the same n cases; the columns
share the random draws — cheaper, and each column's statistics keep their meaning).

Estimate: ``Δ = (1/n) Σ d_i``.

**Sign-flip p-value** (two-sided paired permutation test): under H0 "the two runs are
exchangeable for every case", ``d_i`` is as likely as ``−d_i``. With ``S = Σ d_i``,
``p = P(|Σ s_i |d_i|| ≥ |S|)`` over independent fair signs ``s_i ∈ {−1, +1}``; zero differences
do not move the sum. Computed

- exactly when the law is small: cases sharing a magnitude v flip together as
  ``v·(2·Bin(c, ½) − c)``, and the law of the sum is built group by group (equal sums merged) as
  long as it has at most ``EXACT_MAX_SUPPORT`` points. With one magnitude (hit@k: ``d ∈ {−1, 0,
  1}``) this is the two-sided sign test ``p = 2·P(B ≤ (m − |2b − m|)/2)``, ``B ~ Bin(m, ½)``, b =
  the number of positive differences, for any m; a handful of distinct magnitudes (1 or 2 cases
  changed out of 29) is enumerated completely;
- otherwise by Monte Carlo over R random sign vectors (cases with the same ``|d|`` row flip as a
  group: ``(2·Bin(c, ½) − c)·|d|``), ``p = (1 + #{|S*| ≥ |S|}) / (1 + R)``, which is never 0 and
  keeps ``P(p ≤ α) ≤ α`` under H0.

**One-sided p-values** (the gate asks a one-sided question: did it get worse?): ``P(S* ≤ S)``
for a drop and ``P(S* ≥ S)`` for a gain, from the same law (exact) or the same draws (Monte
Carlo, ``(1 + #{S* ≤ S}) / (1 + R)``). With one magnitude this is the exact one-sided sign test
``P(B ≤ b)``: 5 lost and none gained gives ``(½)⁵ = 1/32`` (``sign_flip_tests``).

Deterministic: the same matrix, ``seed`` and ``resamples`` give the same numbers. The sign flips
draw from the second of two streams spawned from ``seed`` (the first fed a bootstrap, now a test
reference in ``tests/reference.py``; keeping the second keeps every stored p-value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from retrieval_gate.defaults import DEFAULT_RESAMPLES

EXACT_MAX_SUPPORT = 1 << 14  # largest exact sign-flip law computed (points, before merging)
CHUNK_ELEMENTS = 1 << 22  # numbers per chunk of the resample matrix (32 MiB of float64)
BINOMIAL_COST = 16  # a binomial draw per group costs about as much as this many random signs
_ZERO = 1e-12  # |d| below this is a tie (scores are stored to 6 decimals)


def _as_matrix(diffs: np.ndarray | list[float]) -> np.ndarray:
    arr = np.asarray(diffs, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError("differences must be a vector or an n × M matrix")
    if not np.all(np.isfinite(arr)):
        raise ValueError("differences must be finite")
    return arr


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    boot, flip = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(boot), np.random.default_rng(flip)


def _chunk_rows(n: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(n, 1))


def _unique_rows(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``d`` (in sorted order) and how many cases share each."""
    rows, counts = np.unique(d, axis=0, return_counts=True)
    return rows, counts


def _log_binomial_pmf(c: int) -> np.ndarray:
    """``log P(B = b)`` for ``B ~ Bin(c, ½)``, b = 0…c."""
    log_factorial = np.array([math.lgamma(x + 1) for x in range(c + 1)])
    return log_factorial[c] - log_factorial - log_factorial[::-1] - c * math.log(2.0)


def _exact_law(magnitudes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact sign-flip law of ``Σ_g v_g·(2·B_g − c_g)`` with independent ``B_g ~ Bin(c_g, ½)``:
    ``(sums, probabilities)``, built group by group (cases sharing a magnitude v_g flip as a
    binomial), equal sums merged. None when the support would exceed ``EXACT_MAX_SUPPORT`` points."""
    sums, probs = np.zeros(1), np.ones(1)
    for value, count in zip(magnitudes.tolist(), counts.tolist(), strict=True):
        if len(sums) * (count + 1) > EXACT_MAX_SUPPORT:
            return None
        steps = value * (2.0 * np.arange(count + 1) - count)
        merged, inverse = np.unique(np.round((sums[:, None] + steps).ravel(), 9), return_inverse=True)
        probs = np.bincount(inverse, weights=(probs[:, None] * np.exp(_log_binomial_pmf(count))).ravel())
        sums = merged
    return sums, probs


def _exact_p(
    magnitudes: np.ndarray, counts: np.ndarray, observed: float, tol: float,
) -> tuple[float, float, float] | None:
    """``(two-sided, less, greater)`` exact sign-flip p-values of the observed sum S:
    ``P(|S*| ≥ |S|)``, ``P(S* ≤ S)``, ``P(S* ≥ S)``. None when the law is too large to enumerate."""
    if len(magnitudes) == 1:  # the sign test, b = the number of positive differences
        c = int(counts[0])
        b = round((observed / float(magnitudes[0]) + c) / 2)
        gap = abs(2 * b - c)
        two = 1.0 if gap == 0 else min(1.0, 2.0 * binomial_lower_tail((c - gap) // 2, c))
        return two, binomial_lower_tail(b, c), binomial_lower_tail(c - b, c)
    law = _exact_law(magnitudes, counts)
    if law is None:
        return None
    sums, probs = law
    two = float(min(1.0, probs[np.abs(sums) >= abs(observed) - tol].sum()))
    less = float(min(1.0, probs[sums <= observed + tol].sum()))
    greater = float(min(1.0, probs[sums >= observed - tol].sum()))
    return two, less, greater


def _support_bound(magnitudes: np.ndarray, counts: np.ndarray) -> float:
    """An upper bound on the number of distinct sign-flip sums, to skip hopeless exact attempts:
    ``Π (c_g + 1)``, or, when the magnitudes share a grid q (multiples of 1e-6), ``Σ c_g v_g / q + 1``."""
    product = math.prod(float(c) + 1 for c in counts.tolist())
    units = [round(v * 1e6) for v in magnitudes.tolist()]
    if min(units) < 1 or any(abs(u - v * 1e6) > 1e-3 for u, v in zip(units, magnitudes.tolist(), strict=True)):
        return product
    grid = math.gcd(*units)
    return min(product, sum(c * u for c, u in zip(counts.tolist(), units, strict=True)) / grid + 1)


def binomial_lower_tail(low: int, m: int) -> float:
    """``P(B ≤ low)`` for ``B ~ Bin(m, ½)`` = ``Σ_{i ≤ low} C(m, i) / 2^m``, summed in log space
    (no overflow for large m)."""
    if low < 0:
        return 0.0
    if low >= m:
        return 1.0
    logs = _log_binomial_pmf(m)[: low + 1]
    top = float(logs.max())
    return min(1.0, math.exp(top) * math.fsum(np.exp(logs - top).tolist()))


@dataclass(frozen=True)
class SignFlipP:
    """Per column of an ``n × M`` matrix: the two-sided p-value ``P(|S*| ≥ |S|)``, the one-sided
    ones for a drop ``P(S* ≤ S)`` (``less``) and for a gain ``P(S* ≥ S)`` (``greater``), and how
    each column was computed ("exact" or "monte-carlo")."""

    two_sided: np.ndarray
    less: np.ndarray
    greater: np.ndarray
    methods: list[str]


def sign_flip_tests(
    diffs: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, monte_carlo: bool = True,
) -> SignFlipP:
    """Two-sided and one-sided paired sign-flip p-values per column (module docstring).
    ``monte_carlo=False``: a column whose law is too large to enumerate gets NaN (the caller
    estimates it otherwise)."""
    d = _as_matrix(diffs)
    m_cols = d.shape[1]
    if resamples < 1:
        raise ValueError("resamples must be ≥ 1")
    mags = np.abs(d)
    two, less, greater = np.ones(m_cols), np.ones(m_cols), np.ones(m_cols)
    methods = ["exact"] * m_cols
    monte_carlo_columns: list[int] = []
    for j in range(m_cols):
        nonzero = mags[mags[:, j] > _ZERO, j]
        if len(nonzero) == 0:
            continue
        magnitudes, counts = np.unique(np.round(nonzero, 12), return_counts=True)
        exact = None
        if len(magnitudes) == 1 or _support_bound(magnitudes, counts) <= EXACT_MAX_SUPPORT:
            exact = _exact_p(magnitudes, counts, float(d[:, j].sum()), _tolerance(float(nonzero.sum())))
        if exact is None:
            monte_carlo_columns.append(j)
            methods[j] = "monte-carlo"
        else:
            two[j], less[j], greater[j] = exact
    if monte_carlo_columns and not monte_carlo:
        for arr in (two, less, greater):
            arr[monte_carlo_columns] = np.nan
    elif monte_carlo_columns:
        estimated = _monte_carlo(d[:, monte_carlo_columns], resamples=resamples, seed=seed)
        two[monte_carlo_columns], less[monte_carlo_columns], greater[monte_carlo_columns] = estimated
    return SignFlipP(two_sided=two, less=less, greater=greater, methods=methods)


def _tolerance(total: float | np.ndarray) -> float | np.ndarray:
    """Sums within this of |S| count as ties (sums are formed in different orders)."""
    return 1e-8 + 1e-10 * total


def _monte_carlo(d: np.ndarray, *, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(1 + #{|S*| ≥ |S|}) / (1 + R)`` per column, and the one-sided ``(1 + #{S* ≤ S}) / (1 + R)``
    and ``(1 + #{S* ≥ S}) / (1 + R)`` from the same draws. Cases with the same ``|d|`` row flip as a
    group: their contribution is ``(2·Bin(c, ½) − c)·|d|``, drawn per group when few distinct
    rows exist; otherwise one random sign per case."""
    mags = np.where(np.abs(d) > _ZERO, np.abs(d), 0.0)
    total = mags.sum(axis=0)
    signed = d.sum(axis=0)
    observed = np.abs(signed)
    tol = _tolerance(total)
    _, rng = _streams(seed)
    extreme = np.zeros(d.shape[1], dtype=np.int64)
    below = np.zeros(d.shape[1], dtype=np.int64)
    above = np.zeros(d.shape[1], dtype=np.int64)
    mags = mags[mags.any(axis=1)]  # a zero difference never moves the sum
    n = len(mags)
    rows, multiplicity = _unique_rows(mags)
    grouped = len(rows) * BINOMIAL_COST <= n
    chunk = _chunk_rows(len(rows) if grouped else n)
    for start in range(0, resamples, chunk):
        count = min(chunk, resamples - start)
        if grouped:
            heads = rng.binomial(multiplicity, 0.5, size=(count, len(rows)))
            sums = (2.0 * heads - multiplicity) @ rows
        else:
            raw = rng.integers(0, 256, size=(count, (n + 7) // 8), dtype=np.uint8)
            bits = np.unpackbits(raw, axis=1, count=n).astype(np.float64)
            sums = 2.0 * (bits @ mags) - total  # Σ s_i |d_i| with s_i = 2·bit − 1
        extreme += (np.abs(sums) >= observed - tol).sum(axis=0)
        below += (sums <= signed + tol).sum(axis=0)
        above += (sums >= signed - tol).sum(axis=0)
    return tuple((1.0 + count) / (1.0 + resamples) for count in (extreme, below, above))  # type: ignore[return-value]
