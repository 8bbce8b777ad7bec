"""The interval of a paired mean difference that agrees with the test that decides. Pure.

The gate decides with the paired sign-flip test (``compare.stats``). The interval shown beside
it is that same test *inverted*: the set of shifts δ that the sign-flip test of ``d_i − δ`` does
not reject at level ``a``:

    CI(a) = { δ : p(δ) ≥ a },   p(δ) = P( |Σ s_i (d_i − δ)| ≥ |Σ (d_i − δ)| ),  s_i fair signs

so a reader never sees an interval that excludes 0 beside a p-value that does not reject, or
the reverse. (A percentile bootstrap beside a sign-flip test can disagree: hit@5 Δ −0.233 over
30 cases had the bootstrap interval [−0.433, −0.033] beside p = 0.065.)

Computed, per δ, with the sign-flip law of the values ``v_g`` of ``d`` (cases sharing a value
flip as ``(2·Bin(c_g, ½) − c_g)·(v_g − δ)``):

- **exactly** when the joint law of all groups but the largest has at most
  ``EXACT_SUPPORT`` points: that law is enumerated, and the largest group's binomial tail is
  added in closed form (hit@k: three values, so any n up to hundreds of changed cases);
- otherwise with R Monte Carlo sign vectors drawn once (seeded): ``Σ s_i (d_i − δ) = A_r − δ·B_r``
  with ``A_r = Σ s_ri d_i`` and ``B_r = Σ s_ri``, so every δ is tested on the same draws and
  ``p(δ) = (1 + #{|A_r − δ B_r| ≥ |S − nδ|}) / (1 + R)``. The unchanged cases (d = 0) move only
  ``B_r`` and flip as one binomial group; metrics over the same cases share the draws.

The end points are found by bisection between the estimate (p = 1) and the edge of the possible
range (``[−1, 1]`` for measures in [0, 1], or beyond the data): the boundary of the accepted
set nearest to the estimate. Finally the interval is made to agree with the p-value *reported*
(``p_value``, from ``compare.stats``; both are exact where the law is small, so this only moves
an end point within Monte Carlo error): 0 lies inside exactly when ``p_value ≥ a`` — an end point
is extended to 0, or moved to the accepted boundary between 0 and the estimate.

The level: ``a = alpha`` for a row the gate does not judge; for a judged row under a multiple
comparison correction, ``a = alpha · p / p_adjusted`` — the level the correction spent on that
row, so that 0 lies outside exactly when the *adjusted* p is below alpha. Coverage at n = 10–300
is checked by ``benchmarks/bench_power.py`` (docs/baseline.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from retrieval_gate.compare.stats import CHUNK_ELEMENTS, DEFAULT_RESAMPLES

EXACT_SUPPORT = 1 << 12  # largest enumerated law (points) per δ
_BISECTIONS = 48
_TIE = 1e-9  # sums within this (relative to their scale) count as ties


def sign_flip_interval(
    diffs: np.ndarray | list[float], *, level: float, p_value: float | None = None,
    resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
) -> tuple[float, float]:
    """``(low, high)``: the sign-flip test of the mean difference inverted — the shifts it does not
    reject at ``a = 1 − level`` (module docstring). ``p_value``: the p at 0
    that the reader sees; the interval contains 0 exactly when ``p_value ≥ a``."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    if len(d) == 0:
        raise ValueError("no paired cases")
    return invert(p_function(d, resamples=resamples, seed=seed), d, level=level, p_value=p_value)


def invert(p_of: Callable[[float], float], diffs: np.ndarray, *, level: float,
           p_value: float | None = None) -> tuple[float, float]:
    """The interval from a ``p_function`` of the same differences (see ``sign_flip_interval``)."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    a = 1.0 - level
    estimate = math.fsum(d.tolist()) / len(d)
    low_edge = min(-1.0, float(d.min()) - 1.0)
    high_edge = max(1.0, float(d.max()) + 1.0)
    low = _boundary(p_of, a, inside=estimate, outside=low_edge)
    high = _boundary(p_of, a, inside=estimate, outside=high_edge)
    # an end point within tie tolerance of the estimate is the estimate (no spread: [Δ, Δ])
    low, high = (estimate if abs(end - estimate) < 1e-8 else end for end in (low, high))
    if p_value is not None:
        low, high = _agree_at_zero(p_of, a, low, high, estimate, p_value)
    return low, high


def _boundary(p_of: Callable[[float], float], a: float, *, inside: float, outside: float) -> float:
    """The accepted point nearest ``outside`` found by bisection from ``inside`` (p(inside) = 1)."""
    if p_of(outside) >= a:
        return outside
    for _ in range(_BISECTIONS):
        mid = (inside + outside) / 2
        if p_of(mid) >= a:
            inside = mid
        else:
            outside = mid
    return inside


def _agree_at_zero(p_of: Callable[[float], float], a: float, low: float, high: float, estimate: float,
                   p_value: float) -> tuple[float, float]:
    if p_value >= a:  # not rejected: 0 belongs to the interval
        return min(low, 0.0), max(high, 0.0)
    if low <= 0.0 <= high:  # rejected: the accepted boundary between 0 and the estimate
        if estimate > 0:
            low = max(_boundary(p_of, a, inside=estimate, outside=0.0), math.ulp(0.0))
        elif estimate < 0:
            high = min(_boundary(p_of, a, inside=estimate, outside=0.0), -math.ulp(0.0))
    return low, high


def p_function(diffs: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Callable[[float], float]:
    """``δ ↦ p(δ)``, the sign-flip p-value of ``d_i − δ`` (exact, or on R draws made once).
    ``p_function(d)(0.0)`` is a valid p-value of "no change" itself."""
    d = np.asarray(diffs, dtype=np.float64).reshape(-1, 1)
    return p_functions(d, resamples=resamples, seed=seed)[0]


def p_functions(block: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
                ) -> list[Callable[[float], float]]:
    """``p_function`` of each column of an ``n × M`` block of paired differences over the same
    cases. Columns whose law cannot be enumerated share one set of Monte Carlo draws: the cases
    unchanged in every such column flip as one binomial group (they move only ``B_r``), every
    other case gets one random sign, used by all the columns."""
    d = np.asarray(block, dtype=np.float64)
    out: list[Callable[[float], float] | None] = []
    monte_carlo: list[int] = []
    for j in range(d.shape[1]):
        values, counts = np.unique(d[:, j], return_counts=True)
        exact = _exact_p_function(values, counts)
        out.append(exact)
        if exact is None:
            monte_carlo.append(j)
    if monte_carlo:
        for j, p_of in zip(monte_carlo, _monte_carlo_p_functions(d[:, monte_carlo], resamples=resamples, seed=seed),
                           strict=True):
            out[j] = p_of
    return [p_of for p_of in out if p_of is not None]


def _lower_tails(c: int) -> np.ndarray:
    """``P(B ≤ m)`` for ``B ~ Bin(c, ½)``, m = 0…c (lower tails summed from the small end)."""
    logs = np.array([math.lgamma(c + 1) - math.lgamma(m + 1) - math.lgamma(c - m + 1) for m in range(c + 1)])
    pmf = np.exp(logs - c * math.log(2.0))
    return np.minimum(np.cumsum(pmf), 1.0)


def _exact_p_function(values: np.ndarray, counts: np.ndarray) -> Callable[[float], float] | None:
    """p(δ) from the enumerated law of all value groups but the largest, and the largest group's
    binomial tails. None when the enumeration would exceed ``EXACT_SUPPORT`` points."""
    largest = int(np.argmax(counts))
    rest = [g for g in range(len(values)) if g != largest]
    if math.prod(int(counts[g]) + 1 for g in rest) > EXACT_SUPPORT:
        return None
    # Flip patterns of the other groups: F_g = 2·H_g − c_g with their joint probability.
    patterns = np.zeros((1, len(rest)))
    probs = np.ones(1)
    for j, g in enumerate(rest):
        c = int(counts[g])
        steps = 2.0 * np.arange(c + 1) - c
        pmf = np.diff(np.concatenate(([0.0], _lower_tails(c))))
        patterns = np.repeat(patterns, c + 1, axis=0)
        patterns[:, j] = np.tile(steps, len(probs))
        probs = np.outer(probs, pmf).ravel()
    c_big = int(counts[largest])
    tails = _lower_tails(c_big)
    other_values = values[rest]
    total = float(np.dot(values, counts))
    n = int(counts.sum())
    scale = float(np.dot(np.abs(values), counts)) + n

    def p_of(delta: float) -> float:
        observed = abs(total - n * delta) - _TIE * scale
        if observed <= 0:
            return 1.0
        y = patterns @ (other_values - delta) if len(rest) else np.zeros(1)
        u = abs(float(values[largest]) - delta)
        if u <= _TIE * scale / max(n, 1):  # the largest group does not move the sum
            return float(min(1.0, probs[np.abs(y) >= observed].sum()))
        # y + u·(2H − c) ≥ observed  ⇔  H ≥ (c + (observed − y)/u) / 2; the law of H is symmetric,
        # so P(H ≥ m) = P(H ≤ c − m).
        upper_m = np.ceil((c_big + (observed - y) / u) / 2 - 1e-9)
        lower_m = np.floor((c_big + (-observed - y) / u) / 2 + 1e-9)
        up = _tail(tails, c_big - upper_m, c_big)
        down = _tail(tails, lower_m, c_big)
        return float(min(1.0, np.dot(probs, up + down)))

    return p_of


def _tail(tails: np.ndarray, m: np.ndarray, c: int) -> np.ndarray:
    """``P(B ≤ m)`` elementwise (0 below 0, 1 from c on)."""
    index = np.clip(m, -1, c).astype(np.int64)
    return np.where(index < 0, 0.0, tails[np.clip(index, 0, c)])


def _monte_carlo_p_functions(d: np.ndarray, *, resamples: int, seed: int) -> list[Callable[[float], float]]:
    """p(δ) of each column on R sign vectors drawn once (``p_functions``)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])
    m_cols = d.shape[1]
    still = ~np.any(d != 0.0, axis=1)
    z = int(still.sum())
    moving = d[~still]
    m = len(moving)
    a_sums = np.zeros((resamples, m_cols))
    b_sums = 2.0 * rng.binomial(z, 0.5, size=resamples) - z  # the unchanged cases: Σ s_i over them
    if m:
        chunk = max(1, CHUNK_ELEMENTS // m)
        column_sums = moving.sum(axis=0)
        for start in range(0, resamples, chunk):
            count = min(chunk, resamples - start)
            raw = rng.integers(0, 256, size=(count, (m + 7) // 8), dtype=np.uint8)
            bits = np.unpackbits(raw, axis=1, count=m).astype(np.float64)
            # Σ s_i x_i with s_i = 2·bit − 1
            a_sums[start:start + count] = 2.0 * (bits @ moving) - column_sums
            b_sums[start:start + count] += 2.0 * bits.sum(axis=1) - m
    return [_mc_p_of(a_sums[:, j].copy(), b_sums, d[:, j], resamples) for j in range(m_cols)]


def _mc_p_of(a_sums: np.ndarray, b_sums: np.ndarray, d: np.ndarray, resamples: int) -> Callable[[float], float]:
    n = len(d)
    total = float(d.sum())
    scale = float(np.abs(d).sum()) + n

    def p_of(delta: float) -> float:
        observed = abs(total - n * delta) - _TIE * scale
        extreme = int(np.count_nonzero(np.abs(a_sums - delta * b_sums) >= observed))
        return (1.0 + extreme) / (1.0 + resamples)

    return p_of
