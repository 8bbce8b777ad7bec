"""stats.paired_interval: Tango's score interval against an independent implementation (the
constrained maximum likelihood found numerically, the score statistic inverted on a fine grid),
closed forms at zero counts, and the t interval against scipy's one-sample t test."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import ttest_1samp

from retrieval_gate.stats.paired_interval import T_MIN_CHANGED, paired_interval, reconcile, tango_interval


def independent_z(delta: float, gained: int, lost: int, n: int) -> float:
    """Score statistic with the restricted MLE found numerically: maximise
    g·log(q + δ) + l·log(q) + (n − g − l)·log(1 − 2q − δ) over the loss probability q."""
    low, high = max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12
    if high <= low:
        q = low
    else:
        def negative(q: float) -> float:
            total = 0.0
            for count, prob in ((gained, q + delta), (lost, q), (n - gained - lost, 1 - 2 * q - delta)):
                if count:
                    total += count * math.log(max(prob, 1e-300))
            return -total
        q = minimize_scalar(negative, bounds=(low, high), method="bounded", options={"xatol": 1e-13}).x
    variance = n * (2 * q + delta - delta * delta)
    return (gained - lost - n * delta) / math.sqrt(variance)


def independent_interval(gained: int, lost: int, n: int, level: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    grid = np.linspace(-0.999, 0.999, 3997)
    accepted = [d for d in grid if abs(independent_z(float(d), gained, lost, n)) <= z]
    return float(min(accepted)), float(max(accepted))


@pytest.mark.parametrize("gained,lost,n", [(2, 9, 30), (0, 2, 300), (5, 5, 40), (1, 0, 25), (12, 3, 100),
                                           (0, 6, 100)])
def test_tango_equals_an_independent_score_inversion(gained, lost, n):
    low, high = tango_interval(gained=gained, lost=lost, n=n, level=0.95)
    b_low, b_high = independent_interval(gained, lost, n, 0.95)
    step = 2 * 0.999 / 3996
    assert low == pytest.approx(b_low, abs=step) and high == pytest.approx(b_high, abs=step)


@pytest.mark.parametrize("n", [1, 5, 30, 300])
def test_no_change_gives_plus_minus_z_squared_over_n_plus_z_squared(n):
    # Z(δ) = −√(nδ/(1 − δ)) when nothing changed: |Z| = z at δ = z²/(n + z²)
    z = NormalDist().inv_cdf(0.975)
    low, high = tango_interval(gained=0, lost=0, n=n, level=0.95)
    assert (low, high) == pytest.approx((-z * z / (n + z * z), z * z / (n + z * z)), abs=1e-9)


def test_one_way_changes_keep_the_other_side_open_and_every_bound_in_range():
    low, high = tango_interval(gained=0, lost=2, n=300, level=0.95)
    assert low < -2 / 300 < 0 < high  # not pinned at 0 on the side where nothing moved
    assert tango_interval(gained=5, lost=0, n=5, level=0.95)[1] == 1.0
    assert tango_interval(gained=0, lost=1100, n=1100, level=0.99)[0] == -1.0
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        lost = int(rng.integers(0, n + 1))
        gained = int(rng.integers(0, n - lost + 1))
        level = float(rng.choice([0.9, 0.95, 0.99, 1 - 0.05 / 24]))
        low, high = tango_interval(gained=gained, lost=lost, n=n, level=level)
        assert -1.0 <= low <= (gained - lost) / n <= high <= 1.0 and high > low


def test_continuous_rows_use_a_t_interval_from_ten_changed_cases():
    rng = np.random.default_rng(8)
    d = np.zeros(50)
    d[:20] = np.round(rng.normal(-0.1, 0.2, 20), 6)
    (low, high), method = paired_interval(d, binary=False, level=0.95)
    expected = ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert method == "t" and (low, high) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_with_few_changed_cases_the_continuous_interval_is_tango_on_fractional_counts():
    d = np.zeros(40)
    d[: T_MIN_CHANGED - 1] = -0.4
    d[0] = 0.3
    (low, high), method = paired_interval(d, binary=False, level=0.95)
    gained, lost = 0.3, 0.4 * (T_MIN_CHANGED - 2)
    assert method == "tango-fractional"
    assert (low, high) == pytest.approx(tango_interval(gained=gained, lost=lost, n=40, level=0.95), abs=1e-12)
    (zero_low, zero_high), _ = paired_interval(np.zeros(40), binary=False, level=0.95)
    assert zero_low < 0 < zero_high  # nothing changed: still not a zero-width interval


def test_a_uniform_continuous_shift_over_every_case_is_a_narrow_t_interval():
    d = np.full(30, -0.05)
    d[0] = -0.051
    (low, high), method = paired_interval(d, binary=False, level=0.95)
    assert method == "t" and low < d.mean() < high < 0


@pytest.mark.parametrize("ci,significant,expected", [
    ((-0.2, -0.01), False, ((-0.2, 0.0), True, True)),  # the test does not reject: extended to 0
    ((0.03, 0.4), False, ((0.0, 0.4), True, True)),
    ((-0.2, -0.01), True, ((-0.2, -0.01), True, False)),
    ((-0.2, 0.05), False, ((-0.2, 0.05), True, False)),
    ((-0.2, 0.05), True, ((-0.2, 0.05), False, False)),  # the test rejects, the CI holds 0: marked
])
def test_reconcile_extends_to_zero_where_the_test_does_not_reject(ci, significant, expected):
    assert reconcile(ci, significant=significant) == expected
