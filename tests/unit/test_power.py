"""stats.power: the MDE is the smallest drop the gate's own test detects at 80 % power. Checked
against an independent brute-force power (every (changed, lost) count enumerated with math.comb,
the exact sign test's p worked out per count) and against the normal approximation solved here."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from retrieval_gate.stats.power import binary_mde, cases_needed, continuous_mde, mde, min_changed, sign_test_power


def exact_sign_p(lost: int, m: int) -> float:
    """Two-sided exact sign test: 2·P(Bin(m, ½) ≤ min(l, m − l)), capped at 1."""
    if m == 0:
        return 1.0
    low = min(lost, m - lost)
    return min(1.0, 2 * sum(math.comb(m, i) for i in range(low + 1)) / 2 ** m)


def brute_power(n: int, drop: float, churn: float, alpha: float) -> float:
    """P(reject) with each case lost w.p. (ψ + δ)/2, gained w.p. (ψ − δ)/2, ψ = max(churn, δ)."""
    psi = max(churn, drop)
    p_lost, p_gained = (psi + drop) / 2, (psi - drop) / 2
    total = 0.0
    for lost in range(n + 1):
        for gained in range(n - lost + 1):
            if exact_sign_p(lost, lost + gained) < alpha:
                ways = math.comb(n, lost) * math.comb(n - lost, gained)
                total += ways * p_lost ** lost * p_gained ** gained * (1 - psi) ** (n - lost - gained)
    return total


@pytest.mark.parametrize("alpha,expected", [(0.05, 6), (0.05 / 3, 7), (0.01, 8), (0.2, 4)])
def test_min_changed_by_hand(alpha, expected):
    # 0.05: 2·0.5^6 = 0.031 < 0.05 ≤ 2·0.5^5 = 0.0625; 0.0167: 2·0.5^7 = 0.0156; 0.01: 2·0.5^8 = 0.0078
    assert min_changed(alpha) == expected
    assert 2 * 0.5 ** expected < alpha <= 2 * 0.5 ** (expected - 1)


@pytest.mark.parametrize("n,drop,churn,alpha", [
    (6, 0.5, 0.0, 0.05), (12, 0.2, 0.0, 0.05), (12, 0.2, 0.4, 0.05), (30, 0.1, 0.05, 0.05),
    (30, 0.25, 0.3, 0.05 / 3), (40, 0.05, 0.2, 0.05), (25, 0.3, 0.0, 0.01),
])
def test_sign_test_power_equals_brute_force_enumeration(n, drop, churn, alpha):
    assert sign_test_power(n=n, drop=drop, churn=churn, alpha=alpha) == pytest.approx(
        brute_power(n, drop, churn, alpha), abs=1e-10)


@pytest.mark.parametrize("n", [6, 10, 30, 55, 100, 300])
def test_the_binary_mde_reaches_80_percent_power_and_no_less(n):
    size = binary_mde(n=n, churn=0.0, alpha=0.05)
    assert size is not None
    # only lost cases change: power(δ) = P(Bin(n, δ) ≥ 6), solved independently
    assert size == pytest.approx(brentq(lambda d: binom.sf(5, n, d) - 0.8, 1e-9, 1 - 1e-9, xtol=1e-13), abs=1e-9)
    if n <= 30:
        assert brute_power(n, size + 1e-7, 0.0, 0.05) >= 0.8 > brute_power(n, size - 1e-4, 0.0, 0.05)


def test_churn_raises_the_mde_and_never_lowers_it_below_the_floor():
    floor = binary_mde(n=300, churn=0.0, alpha=0.05)
    assert floor is not None
    at_churn = binary_mde(n=300, churn=0.1, alpha=0.05)
    assert at_churn is not None and at_churn > floor
    assert sign_test_power(n=300, drop=at_churn, churn=0.1, alpha=0.05) == pytest.approx(0.8, abs=1e-6)
    # 2 lost of 300 observed: the churn 2/300 is below the floor, so the MDE is the floor itself —
    # never the smaller figure a variance from two cases would give
    d = np.zeros(300)
    d[:2] = -1
    assert mde(n=300, diffs=d, binary=True, alpha=0.05) == (floor, "observed")
    assert mde(n=300, diffs=None, binary=True, alpha=0.05) == (floor, "prior")


@pytest.mark.parametrize("n", [1, 3, 5])
def test_below_six_cases_no_drop_is_detectable_at_alpha_005(n):
    # even n of n lost gives p = 2·0.5^n ≥ 0.0625
    assert mde(n=n, diffs=None, binary=True, alpha=0.05) == (None, "undetectable")
    assert mde(n=n, diffs=np.full(n, -0.5), binary=False, alpha=0.05) == (None, "undetectable")
    assert exact_sign_p(n, n) >= 0.05


def test_continuous_mde_solves_the_normal_approximation_of_the_sign_flip_test():
    n, sd = 100, 0.3
    z = NormalDist().inv_cdf(0.975)
    expected = brentq(lambda d: NormalDist().cdf((math.sqrt(n) * d - z * math.sqrt(sd ** 2 + d ** 2)) / sd) - 0.8,
                      1e-9, 1.0, xtol=1e-13)
    floor = brentq(lambda d: binom.sf(5, n, d) - 0.8, 1e-9, 1 - 1e-9, xtol=1e-13)
    size = continuous_mde(n=n, sd=sd, unit=0.2, alpha=0.05)
    assert expected > 0.2 * floor and size == pytest.approx(expected, abs=1e-9)
    # a uniform, tiny spread: the floor (u × the binary floor) holds the MDE up
    assert continuous_mde(n=n, sd=1e-4, unit=0.05, alpha=0.05) == pytest.approx(0.05 * floor, abs=1e-9)


def test_cases_needed_is_the_smallest_n_whose_mde_reaches_the_drop():
    needed = cases_needed(effect=0.05, diffs=None, binary=True, alpha=0.05)
    expected = next(n for n in range(6, 100_000) if binom.sf(5, n, 0.05) >= 0.8)
    assert needed == expected
    assert cases_needed(effect=0.0, diffs=None, binary=True, alpha=0.05) is None
    d = np.zeros(200)
    d[:40] = -0.25
    d[40:60] = 0.25
    needed = cases_needed(effect=0.02, diffs=d, binary=False, alpha=0.05)
    assert needed is not None
    sd, unit = float(d.std(ddof=1)), 0.25
    # 40 down, 20 up of 200: the two-way churn is 2·20/200 = 0.2
    assert continuous_mde(n=needed, sd=sd, unit=unit, alpha=0.05, churn=0.2) <= 0.02 + 1e-12
    assert continuous_mde(n=needed - 1, sd=sd, unit=unit, alpha=0.05, churn=0.2) > 0.02


def test_more_lost_cases_never_raise_the_binary_mde():
    # the churn is the two-way movement 2·min(lost, gained)/n: 20 or 40 lost beside 10 gained of
    # 300 give the same MDE, that of churn 20/300; the advice does not grow with the evidence
    def diffs(lost: int, gained: int) -> np.ndarray:
        d = np.zeros(300)
        d[:lost] = -1
        d[lost:lost + gained] = 1
        return d

    at_20 = mde(n=300, diffs=diffs(20, 10), binary=True, alpha=0.05, one_sided=True)
    at_40 = mde(n=300, diffs=diffs(40, 10), binary=True, alpha=0.05, one_sided=True)
    assert at_20 == at_40 == (binary_mde(n=300, churn=20 / 300, alpha=0.05, one_sided=True), "observed")
    only_lost = [mde(n=300, diffs=diffs(k, 0), binary=True, alpha=0.05, one_sided=True)[0] for k in (2, 10, 40)]
    assert only_lost == [binary_mde(n=300, churn=0.0, alpha=0.05, one_sided=True)] * 3
