"""The confidence interval of a paired mean difference shown beside each row. Pure, deterministic
(no resampling).

- **Binary measures** (per-case scores in {0, 1} in both runs, so ``d_i ∈ {−1, 0, 1}``): Tango's
  score interval for the difference of paired proportions (Tango 1998), the set of δ whose score
  statistic stays within ``±z_{1−a/2}``:

      Z(δ) = (g − l − nδ) / √(n·(2·p̃(δ) + δ − δ²))

  with g gained cases (0 → 1), l lost cases (1 → 0) and ``p̃(δ)`` the maximum-likelihood
  probability of a loss under the constraint "true difference = δ":
  ``p̃ = (−W + √(W² + 8n·l·δ(1 − δ))) / (4n)``, ``W = −g − l + δ(2n − g + l)``. It lies in
  [−1, 1] by construction, is never of zero width (no change at n cases gives
  ``±z²/(n + z²)``), and stays open on the side where no case moved when every change goes one way.
- **Continuous measures** (nDCG, MRR, MAP, recall with several gold cards): a Student t interval
  on the paired differences, ``d̄ ± t_{n−1, 1−a/2}·s/√n``, clipped to [−1, 1], when at least
  ``T_MIN_CHANGED`` cases changed; with fewer changed cases the t interval's variance estimate is
  unreliable (and zero when nothing changed), so the **small-n rule** uses Tango's interval on the
  fractional counts ``g = Σ max(d_i, 0)``, ``l = Σ max(−d_i, 0)``: a difference in [−1, 1] can be
  replaced by a −1/0/+1 draw with the same mean and a second moment ``|d| ≥ d²``, so this is the
  binary interval of a measure at least as variable — conservative, and in [−1, 1].

The gate's status reads the exact sign test (binary) or the sign-flip permutation test
(continuous), ``stats.sign_flip``; a score interval and an exact test can disagree near the edge.
``reconcile``: where the test does not reject but the interval excludes 0 (the score interval is
less conservative than the exact sign test: 5 lost of 100, nothing gained, has p = 0.0625 but
Z(0) = −2.24), the interval is extended to 0 — it only grows, so its coverage only grows — and
agrees with the status. The reverse (the test rejects, the interval holds 0: a t interval beside
a sign-flip test, or Holm's adjusted p beside a Bonferroni-level interval) is left as computed
and marked (``ci_agrees`` false); the status reads the test. Coverage, measured by
``benchmarks/bench_stats_calibration.py``: docs/baseline.md.
"""

from __future__ import annotations

import math

import numpy as np

from retrieval_gate.stats.distributions import find_root, normal_quantile, t_quantile

T_MIN_CHANGED = 6  # fewer changed cases than this: the small-n rule (fractional Tango)
_EDGE = 1e-12


def tango_statistic(delta: float, *, gained: float, lost: float, n: int) -> float:
    """Tango's score statistic Z(δ) (module docstring)."""
    w = -gained - lost + delta * (2 * n - gained + lost)
    p_lost = (-w + math.sqrt(max(0.0, w * w + 8.0 * n * lost * delta * (1.0 - delta)))) / (4.0 * n)
    p_lost = max(p_lost, -delta, 0.0)  # the constrained MLE lies where P(gain) = P(loss) + δ ≥ 0
    variance = n * (2.0 * p_lost + delta - delta * delta)
    numerator = gained - lost - n * delta
    if variance <= 0.0:
        return 0.0 if abs(numerator) < 1e-12 else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def tango_interval(*, gained: float, lost: float, n: int, level: float) -> tuple[float, float]:
    """``(low, high)``: Tango's score interval for the paired difference (gained − lost)/n."""
    if n < 1:
        raise ValueError("n must be ≥ 1")
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    z = normal_quantile(1 - (1 - level) / 2)
    estimate = (gained - lost) / n

    def upper(delta: float) -> float:
        return tango_statistic(delta, gained=gained, lost=lost, n=n) + z  # > 0 while accepted

    def lower(delta: float) -> float:
        return tango_statistic(delta, gained=gained, lost=lost, n=n) - z  # < 0 while accepted

    top, bottom = 1.0 - _EDGE, -1.0 + _EDGE
    high = 1.0 if upper(top) >= 0 else find_root(upper, low=min(estimate, top), high=top, xtol=1e-12)
    low = -1.0 if lower(bottom) <= 0 else find_root(lower, low=bottom, high=max(estimate, bottom), xtol=1e-12)
    return float(max(-1.0, low)), float(min(1.0, high))


def paired_interval(diffs: np.ndarray, *, binary: bool, level: float) -> tuple[tuple[float, float], str]:
    """``((low, high), method)`` with method ``"tango"`` (binary), ``"t"`` or
    ``"tango-fractional"`` (continuous, the small-n rule); module docstring."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    n = len(d)
    if n == 0:
        raise ValueError("no paired cases")
    gained = math.fsum(np.maximum(d, 0.0).tolist())
    lost = math.fsum(np.maximum(-d, 0.0).tolist())
    if binary:
        return tango_interval(gained=gained, lost=lost, n=n, level=level), "tango"
    if int(np.count_nonzero(d)) < T_MIN_CHANGED or n < 2:
        return tango_interval(gained=gained, lost=lost, n=n, level=level), "tango-fractional"
    mean = (gained - lost) / n
    half = t_quantile(1 - (1 - level) / 2, df=n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    return (max(-1.0, mean - half), min(1.0, mean + half)), "t"


def reconcile(ci: tuple[float, float], *, significant: bool) -> tuple[tuple[float, float], bool, bool]:
    """``(interval, agrees, extended)``: the interval extended to 0 where the test does not reject
    but the interval excludes 0 (module docstring); ``agrees``: "excludes 0" equals
    ``significant`` afterwards."""
    low, high = ci
    excludes = low > 0 or high < 0
    if excludes and not significant:
        return (min(low, 0.0), max(high, 0.0)), True, True
    return (low, high), excludes == significant, False
