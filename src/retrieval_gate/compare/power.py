"""What a comparison's n can see, and the multiple-comparison correction. Pure.

**Minimum detectable effect** (paired, two-sided level α, power 1 − β; normal approximation):

    MDE = (z_{1−α/2} + z_{1−β}) · s_d / √n

with ``s_d`` the standard deviation of the n paired differences (``ddof = 1``): the smallest true
mean change the test would catch with probability 1 − β at this n. When the differences show no
spread (nothing changed, or n < 2) there is no observed variance; then the bound for hit@k is
used: a drop of δ in hit@k needs at least a share δ of the cases to lose their hit, so the
differences have variance at least ``δ(1 − δ)``, and

    MDE_binomial = z² / (n + z²),   z = z_{1−α/2} + z_{1−β}

solves ``δ = z·√(δ(1 − δ)/n)``: no smaller drop is detectable at this n, whatever the measure.

**Unpaired cells** (the golden-set audit's coverage cells, ``audit/coverage.py``): before a
comparison exists there are no paired differences to measure. The difference of two *independent*
Bernoulli(p) outcomes has variance ``2p(1 − p)``, so ``unpaired_sd(p) = √(2p(1 − p))`` passed as
``sd`` gives

    MDE = (z_{1−α/2} + z_{1−β}) · √(2p(1 − p) / n)

the textbook normal approximation for two proportions near p with n cases each. It is the
conservative (no pairing) value: a paired comparison's ``s_d`` is smaller whenever the two runs'
outcomes are positively correlated (most cases hit or miss in both), so the comparison later
detects at least this much. One rule, two variance sources: observed paired differences here, the
binomial variance of an unpaired pair there.

**Cases needed** to see a drop of ``max_drop`` (same formulas solved for n):
``⌈(z · s_d / max_drop)²⌉`` from observed variance, ``⌈z² (1 − max_drop) / max_drop⌉`` for the
bound. None when ``max_drop`` is 0 (no n sees a drop of 0).

**Corrections** over the p-values of the rows the gate judges (the family), adjusted p-values:

- ``holm`` (default; controls the family-wise error rate): sorted ascending, ``p̃_(i) =
  max_{j ≤ i} min(1, (m − j + 1)·p_(j))``;
- ``bh`` (Benjamini–Hochberg, controls the false discovery rate; ``scipy.stats.false_discovery_control``);
- ``none``: ``p̃ = p``.

A row is significant when ``p̃ < α``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
from scipy.stats import false_discovery_control

CORRECTIONS = ("holm", "bh", "none")
DEFAULT_POWER = 0.8


def z_sum(*, alpha: float, power: float = DEFAULT_POWER) -> float:
    """``z_{1−α/2} + z_{power}``."""
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


def mde(*, n: int, sd: float | None, alpha: float, power: float = DEFAULT_POWER) -> tuple[float, str]:
    """``(MDE, method)`` with method ``"observed"`` (from ``sd``) or ``"binomial"`` (the hit@k
    bound, used when ``sd`` is None or 0). See the module docstring."""
    if n < 1:
        raise ValueError("n must be ≥ 1")
    z = z_sum(alpha=alpha, power=power)
    if sd is not None and sd > 0:
        return z * sd / math.sqrt(n), "observed"
    return z * z / (n + z * z), "binomial"


def cases_needed(*, effect: float, sd: float | None, alpha: float, power: float = DEFAULT_POWER) -> int | None:
    """The n at which ``mde`` reaches ``effect`` (module docstring); None for an effect ≤ 0."""
    if effect <= 0:
        return None
    z = z_sum(alpha=alpha, power=power)
    if sd is not None and sd > 0:
        return max(1, math.ceil((z * sd / effect) ** 2 - 1e-9))
    if effect >= 1:
        return 1
    return max(1, math.ceil(z * z * (1 - effect) / effect - 1e-9))


def unpaired_sd(p: float) -> float:
    """√(2p(1 − p)): the standard deviation of the difference of two independent Bernoulli(p)
    outcomes (the unpaired case of ``mde`` / ``cases_needed``; module docstring)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError("p must be in [0, 1]")
    return math.sqrt(2 * p * (1 - p))


def paired_sd(diffs: np.ndarray) -> float | None:
    """The standard deviation (ddof 1) of paired differences; None below 2 cases."""
    d = np.asarray(diffs, dtype=np.float64)
    return float(d.std(ddof=1)) if len(d) >= 2 else None


def adjust_p(p_values: Sequence[float], method: str) -> list[float]:
    """Adjusted p-values in the input order (module docstring)."""
    if method not in CORRECTIONS:
        raise ValueError(f"correction {method!r}: expected one of {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=np.float64)
    if len(p) == 0 or method == "none":
        return p.tolist()
    if method == "bh":
        return np.asarray(false_discovery_control(p, method="bh")).tolist()
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted.tolist()
