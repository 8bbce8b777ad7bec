"""What a comparison's n can see: the minimum detectable effect. Pure.

**Minimum detectable effect** (MDE): the smallest true drop that the gate's *own* test detects
with probability ``power`` (0.8) at the row's n: two-sided at level ``alpha`` for a reported
row; ``one_sided`` for a judged row, at ``alpha / J`` (Holm's strictest step over the J judged
rows, so the figure is an upper bound for every judged row). One-sided, the sign test rejects
when ``P(Bin(m, ½) ≤ gained) < alpha`` — the two-sided critical table at ``2·alpha`` — and only
a drop counts as detected.

- **Binary measures** (hit@k, and recall/precision when every case has one gold card: per-case
  scores in {0, 1}), decided by the exact two-sided sign test (``stats.sign_flip``). The
  alternative: each case independently loses (1 → 0) with probability ``(ψ + δ)/2`` and gains
  with probability ``(ψ − δ)/2``, so the true mean difference is −δ and ``ψ`` of the cases change
  ("churn"). With M ~ Bin(n, ψ) changed cases and L | M ~ Bin(M, (ψ + δ)/(2ψ)) of them lost, the
  test rejects when ``min(L, M − L) ≤ k(M)``, the largest k with ``2·P(Bin(M, ½) ≤ k) < alpha``;
  the power is that probability summed exactly over M and L (``sign_test_power``). The churn is
  the observed two-way movement — ``2·min(lost, gained)/n``, the share of cases that moved both
  ways, not the drop itself (so the MDE never grows with the number of lost cases) — but never
  below δ (a drop of δ moves at least δ·n cases): ``ψ = max(2·min(l, g)/n, δ)``. Where no case
  moved both ways the prior is **ψ = δ**: the only cases that change are the ones that lose.
  That is the best case for the test, so it is also the *floor*: no MDE is ever below the one at
  ψ = δ, the smallest drop that this n allows to be seen at all.
- **Continuous measures** (nDCG, MRR, MAP, recall with several gold cards), decided by the paired
  sign-flip test, which rejects when ``|Σ d| ≳ z_{1−α/2}·√(Σ d²)``. With the observed standard
  deviation s of the paired differences, a true mean −δ gives ``E Σ d² = n(s² + δ²)`` and the
  normal approximation ``power(δ) = Φ((√n·δ − z_{1−α/2}·√(s² + δ²)) / s)``. Floor: the test
  needs ``min_changed(alpha)`` cases moving the same way before it can reject at all; if the
  drop comes as cases each changing by the observed mean change u (u = 1 where no case changed:
  the prior is whole cases lost, as for hit@k) at the observed churn, it needs
  ``δ ≥ u·MDE_binary(n, churn)``. The MDE is the larger of the two.
- n too small for the test to ever reject (``n < min_changed(alpha)``: e.g. 5 cases at α = 0.05,
  where even 5 of 5 lost gives p = 0.0625): no drop is detectable, MDE None, method
  ``"undetectable"``.

The power is found for δ on [0, 1] by bisection (the power grows with δ). ``cases_needed`` is the
smallest n whose MDE at the same churn and spread is at most the given drop.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from retrieval_gate.stats.distributions import binomial_cdf_walk, log_binomial_pmf, normal_cdf, sign_test_critical

DEFAULT_POWER = 0.8
_BISECTIONS = 40
_MAX_NEEDED = 10_000_000


def _tail(alpha: float, one_sided: bool) -> float:
    """The probability in the rejecting tail: α one-sided, α/2 two-sided."""
    return alpha if one_sided else alpha / 2


def min_changed(alpha: float, *, one_sided: bool = False) -> int:
    """The fewest changed cases with which the sign test can reject at ``alpha``: the smallest m
    with ``2·(½)^m < alpha`` (two-sided) or ``(½)^m < alpha`` (one-sided: 5 at α = 0.05, since
    ``(½)⁵ = 1/32``)."""
    return max(1, math.floor(math.log2((1.0 if one_sided else 2.0) / alpha)) + 1)


def _critical(top: int, alpha: float) -> np.ndarray:
    """``k(m)`` for m = 0…top (a cached table, grown in powers of two)."""
    size = 1 << max(6, int(top).bit_length())
    return sign_test_critical(size, alpha=alpha)[: top + 1]


def sign_test_power(*, n: int, drop: float, churn: float, alpha: float, one_sided: bool = False) -> float:
    """Exact power of the exact sign test (reject when p < alpha; two-sided, or one-sided for a
    drop) at n cases when each case loses with probability ``(ψ + drop)/2`` and gains with
    ``(ψ − drop)/2``, ``ψ = max(churn, drop)`` (module docstring). The sum over the number of
    changed cases skips the counts whose probability is below 1e-15."""
    if n < 1:
        raise ValueError("n must be ≥ 1")
    drop = min(max(drop, 0.0), 1.0)
    psi = min(1.0, max(churn, drop))
    if psi <= 0.0:
        return 0.0
    spread = 9.0 * math.sqrt(n * psi * (1 - psi)) + 10
    lo, hi = max(0, math.floor(n * psi - spread)), min(n, math.ceil(n * psi + spread))
    m = np.arange(lo, hi + 1)
    # one-sided at α: P(Bin(m, ½) ≤ k) < α, the two-sided table at 2α
    k = _critical(hi, 2.0 * alpha if one_sided else alpha)[lo:]
    q = min(1.0, (psi + drop) / (2.0 * psi))  # P(a changed case is lost)
    can = k >= 0
    # the drop is seen when few cases gained (Bin(m, 1 − q) ≤ k); two-sided, also when few lost
    gained_few = binomial_cdf_walk(k, m_start=lo, p=1.0 - q)
    tails = np.where(can, gained_few if one_sided else binomial_cdf_walk(k, m_start=lo, p=q) + gained_few, 0.0)
    weights = np.exp(log_binomial_pmf(m, m=np.full(len(m), n), p=psi))
    return float(min(1.0, np.dot(weights, tails)))


def _smallest(power_of: Callable[[float], float], target: float) -> float | None:
    """The smallest δ in (0, 1] with ``power_of(δ) ≥ target`` (bisection); None when even δ = 1
    falls short."""
    if power_of(1.0) < target:
        return None
    low, high = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = (low + high) / 2
        if power_of(mid) >= target:
            high = mid
        else:
            low = mid
    return high


@lru_cache(maxsize=4096)
def binary_mde(*, n: int, churn: float, alpha: float, power: float = DEFAULT_POWER,
               one_sided: bool = False) -> float | None:
    """The binary MDE at n and the given churn (never below the churn-0 floor); None when the
    sign test cannot reach ``power`` at n."""
    if n < min_changed(alpha, one_sided=one_sided):
        return None

    def power_at(churn_: float) -> Callable[[float], float]:
        return lambda d: sign_test_power(n=n, drop=d, churn=churn_, alpha=alpha, one_sided=one_sided)

    floor = _smallest(power_at(0.0), power)
    if floor is None or churn <= floor:
        return floor
    at_churn = _smallest(power_at(churn), power)
    return None if at_churn is None else max(floor, at_churn)


def _normal_power(*, n: int, drop: float, sd: float, z: float) -> float:
    """The sign-flip test's power at a true mean drop ``drop`` in the normal approximation (module
    docstring): ``Φ((√n·δ − z·√(s² + δ²)) / s)``, z the test's critical value."""
    return normal_cdf((math.sqrt(n) * drop - z * math.sqrt(sd * sd + drop * drop)) / sd)


def continuous_mde(*, n: int, sd: float, unit: float, alpha: float, power: float = DEFAULT_POWER,
                   churn: float = 0.0, one_sided: bool = False) -> float | None:
    """The continuous MDE: the normal approximation of the sign-flip test's power with spread
    ``sd``, never below ``unit`` × the binary MDE at the observed ``churn`` (module docstring)."""
    floor = binary_mde(n=n, churn=round(churn, 12), alpha=alpha, power=power, one_sided=one_sided)
    if floor is None:
        return None
    floor *= unit
    if sd <= 0:
        return floor
    z = NormalDist().inv_cdf(1 - _tail(alpha, one_sided))
    approx = _smallest(lambda d: _normal_power(n=n, drop=d, sd=sd, z=z), power)
    return floor if approx is None else max(floor, approx)


def _shape(diffs: np.ndarray | None) -> tuple[int, float, float, float]:
    """``(changed, churn, sd, unit)`` of observed paired differences. The churn is the two-way
    part of the observed changes, ``2·min(down, up)/n``: the movement a drop rides on, not the
    drop itself — so more lost cases never raise the MDE (a reviewer's advice must not grow with
    the evidence), and the churn under the alternative is ``max(churn, δ)`` (module docstring)."""
    if diffs is None or len(diffs) == 0:
        return 0, 0.0, 0.0, 1.0
    d = np.asarray(diffs, dtype=np.float64)
    moved = np.abs(d[d != 0.0])
    changed = len(moved)
    two_way = 2 * min(int(np.count_nonzero(d < 0)), int(np.count_nonzero(d > 0)))
    sd = float(d.std(ddof=1)) if len(d) >= 2 else 0.0
    return changed, two_way / len(d), sd, float(moved.mean()) if changed else 1.0


def mde(*, n: int, diffs: np.ndarray | None, binary: bool, alpha: float,
        power: float = DEFAULT_POWER, one_sided: bool = False) -> tuple[float | None, str]:
    """``(MDE, method)`` for a row of n paired cases with the observed ``diffs`` (None or all
    zero: nothing changed). method: ``"observed"`` (from the observed changes), ``"prior"``
    (nothing changed: the prior of the module docstring), ``"undetectable"`` (MDE None).
    The audit's coverage cells call it with ``diffs=None``."""
    if n < 1:
        raise ValueError("n must be ≥ 1")
    changed, churn, sd, unit = _shape(diffs)
    if binary:
        value = binary_mde(n=n, churn=round(churn, 12), alpha=alpha, power=power, one_sided=one_sided)
    else:
        value = continuous_mde(n=n, sd=sd, unit=unit, alpha=alpha, power=power, churn=churn,
                               one_sided=one_sided)
    if value is None:
        return None, "undetectable"
    return value, "observed" if changed else "prior"


def cases_needed(*, effect: float, diffs: np.ndarray | None, binary: bool, alpha: float,
                 power: float = DEFAULT_POWER, one_sided: bool = False) -> int | None:
    """The smallest n whose MDE (same churn, spread and unit per case as ``diffs``) is at most
    ``effect``; None for an effect ≤ 0 (no n sees a drop of 0) or beyond ten million cases."""
    if effect <= 0:
        return None
    _, churn, sd, unit = _shape(diffs)
    return _cases_needed(effect=effect, churn=churn, sd=sd, unit=unit, binary=binary, alpha=alpha, power=power,
                         one_sided=one_sided)


@lru_cache(maxsize=1024)
def _cases_needed(*, effect: float, churn: float, sd: float, unit: float, binary: bool, alpha: float,
                  power: float, one_sided: bool) -> int | None:
    z = NormalDist().inv_cdf(1 - _tail(alpha, one_sided))
    least = min_changed(alpha, one_sided=one_sided)

    def seen(n: int, drop: float, churn_: float) -> bool:
        return sign_test_power(n=n, drop=drop, churn=churn_, alpha=alpha, one_sided=one_sided) >= power

    def ok(n: int) -> bool:  # MDE(n) ≤ effect ⇔ the power at the effect reaches the target
        if binary:
            return seen(n, effect, 0.0) and seen(n, effect, churn)
        scaled = effect / unit  # the floor: unit × the binary MDE at the churn ≤ effect
        floor_ok = n >= least if scaled >= 1 else seen(n, scaled, 0.0) and seen(n, scaled, churn)
        if not floor_ok or sd <= 0:
            return floor_ok
        return _normal_power(n=n, drop=effect, sd=sd, z=z) >= power

    low, high = least - 1, least
    while not ok(high):
        low, high = high, high * 2
        if high > _MAX_NEEDED:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid
    return high
