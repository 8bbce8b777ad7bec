"""The interval of a proportion and of a mean, one sample. Pure.

- ``wilson(p, n)``: Wilson's score interval of a proportion ``p`` observed over ``n`` trials,
  centre = (p + z²/2n) / (1 + z²/n), half = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n);
- ``interval_of(n, mean, var, level, binary)``: Wilson's for a proportion, else the t interval
  of a mean, ``mean ± t(1 − (1 − level)/2, n − 1) · sd / √n``, clipped to [0, 1] (every measure
  is a mean of per-case scores in [0, 1]).
"""

from __future__ import annotations

import math

from retrieval_gate.stats.distributions import normal_quantile, t_quantile

Z95 = 1.959963984540054


def wilson(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` over ``n`` trials (module docstring)."""
    if n <= 0:
        return (0.0, 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def interval_of(*, n: int, mean: float, var: float, level: float, binary: bool) -> tuple[float, float]:
    """The interval of a mean of ``n`` values in [0, 1] with that ``mean`` and (n − 1) variance
    ``var``: Wilson's for 0/1 values (``binary``), else the t interval (module docstring)."""
    if n <= 0:
        return (0.0, 1.0)
    if binary:
        return wilson(min(1.0, max(0.0, mean)), n, z=normal_quantile(1 - (1 - level) / 2))
    if n < 2:
        return (mean, mean)
    half = t_quantile(1 - (1 - level) / 2, df=n - 1) * math.sqrt(max(var, 0.0)) / math.sqrt(n)
    return (max(0.0, mean - half), min(1.0, mean + half))
