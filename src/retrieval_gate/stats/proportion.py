"""The interval of a proportion and of a mean, one sample. Pure.

- ``wilson(p, n)``: Wilson's score interval of a proportion ``p`` observed over ``n`` trials,
  centre = (p + z²/2n) / (1 + z²/n), half = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n);
- ``mean_interval(values, level)``: the t interval of a mean, ``mean ± t(1 − (1 − level)/2, n − 1) ·
  sd / √n``, clipped to [0, 1] (every measure is a mean of per-case scores in [0, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def mean_interval(values: Sequence[float], *, level: float, binary: bool) -> tuple[float, float]:
    """The interval of the mean of ``values`` at ``level``: Wilson's for 0/1 values
    (``binary``), else the t interval (module docstring). One value: its Wilson/degenerate bounds."""
    n = len(values)
    if n == 0:
        return (0.0, 1.0)
    mean = math.fsum(values) / n
    if binary:
        return wilson(mean, n, z=normal_quantile(1 - (1 - level) / 2))
    if n < 2:
        return (mean, mean)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_quantile(1 - (1 - level) / 2, df=n - 1) * math.sqrt(var) / math.sqrt(n)
    return (max(0.0, mean - half), min(1.0, mean + half))
