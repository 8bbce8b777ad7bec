"""The comparison's statistics beyond the p-value: the multiple-comparison correction (hand-worked
examples), the MDE and cases-needed formulas (by hand), and the interval that inverts the
sign-flip test (against brute-force enumeration of every sign vector, and its agreement with the
p-value on random rows, exact and Monte Carlo)."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest

from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.compare.interval import sign_flip_interval
from retrieval_gate.compare.power import adjust_p, cases_needed, mde
from retrieval_gate.compare.stats import sign_flip_p_value
from tests.unit.compare_data import hits_results
from tests.unit.test_comparison import run

Z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)


@pytest.mark.parametrize("method,p,expected", [
    # Holm: sorted 0.01, 0.03, 0.04 → 3·0.01, 2·0.03, 1·0.04 → running max 0.03, 0.06, 0.06
    ("holm", [0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),
    ("holm", [0.5, 0.2], [0.5, 0.4]),
    ("holm", [0.6, 0.7, 0.01], [1.0, 1.0, 0.03]),
    # BH: p·m/rank = 0.03, 0.045, 0.04 → running min from the top: 0.03, 0.04, 0.04
    ("bh", [0.01, 0.04, 0.03], [0.03, 0.04, 0.04]),
    ("none", [0.01, 0.04, 0.03], [0.01, 0.04, 0.03]),
    ("holm", [], []),
])
def test_adjusted_p_values_by_hand(method, p, expected):
    assert adjust_p(p, method) == pytest.approx(expected)


def test_an_unknown_correction_is_refused():
    with pytest.raises(ValueError, match="correction 'sidak'"):
        adjust_p([0.1], "sidak")


@pytest.mark.parametrize("n,sd", [(30, 0.3), (100, 0.25), (300, 0.5)])
def test_mde_from_observed_variance_by_hand(n, sd):
    size, method = mde(n=n, sd=sd, alpha=0.05)
    assert method == "observed" and size == pytest.approx((1.959964 + 0.841621) * sd / math.sqrt(n), rel=1e-5)
    needed = cases_needed(effect=size, sd=sd, alpha=0.05)
    assert needed == n


@pytest.mark.parametrize("n", [1, 24, 30, 300])
def test_without_variance_the_hit_bound_solves_delta_equals_z_sqrt_delta_one_minus_delta_over_n(n):
    size, method = mde(n=n, sd=0.0, alpha=0.05)
    assert method == "binomial"
    assert size == pytest.approx(Z * math.sqrt(size * (1 - size) / n))
    assert cases_needed(effect=size, sd=None, alpha=0.05) == n


def test_a_slice_of_24_cannot_see_a_five_point_drop():
    size, _ = mde(n=24, sd=None, alpha=0.05)
    assert size > 0.2  # z²/(24 + z²) ≈ 0.246
    assert cases_needed(effect=0.05, sd=None, alpha=0.05) == math.ceil(Z * Z * 0.95 / 0.05)
    assert cases_needed(effect=0.0, sd=None, alpha=0.05) is None


# The unpaired rule, worked by hand with the published quantiles z_0.975 = 1.959964 and
# z_0.8 = 0.841621 (z = 2.801585, z² = 7.848878): MDE = z·√(2p(1−p)/n), n = ⌈z²·2p(1−p)/δ²⌉.
@pytest.mark.parametrize("n,p,expected", [
    (100, 0.5, 2.801585 * math.sqrt(0.5 / 100)),    # 0.198102
    (400, 0.9, 2.801585 * math.sqrt(0.18 / 400)),   # 0.059431
    (50, 0.2, 2.801585 * 0.08),                     # √(0.32/50) = 0.08 → 0.224127
    (9812, 0.5, 2.801585 * math.sqrt(0.5 / 9812)),  # just under 0.02
])
def test_unpaired_mde_is_the_two_proportion_normal_approximation_by_hand(n, p, expected):
    from retrieval_gate.audit.coverage import mde as cell_mde
    from retrieval_gate.compare.power import unpaired_sd

    size, method = mde(n=n, sd=unpaired_sd(p), alpha=0.05)
    assert method == "observed" and size == pytest.approx(expected, rel=1e-6)
    assert cell_mde(n, p) == size  # the audit's coverage cells use this one rule, not a copy


@pytest.mark.parametrize("effect,p,expected", [
    (0.1, 0.5, 393),    # 7.848878 · 0.5 / 0.01 = 392.44
    (0.05, 0.9, 566),   # 7.848878 · 0.18 / 0.0025 = 565.12
    (0.02, 0.5, 9812),  # 7.848878 · 0.5 / 0.0004 = 9811.10
    (0.2, 0.1, 36),     # 7.848878 · 0.18 / 0.04 = 35.32
])
def test_unpaired_cases_needed_by_hand(effect, p, expected):
    from retrieval_gate.audit.coverage import required_n
    from retrieval_gate.compare.power import unpaired_sd

    assert cases_needed(effect=effect, sd=unpaired_sd(p), alpha=0.05) == expected
    assert required_n(effect, p) == expected


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_unpaired_sd_refuses_a_rate_outside_zero_one(p):
    from retrieval_gate.compare.power import unpaired_sd

    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        unpaired_sd(p)


def brute_interval(d: np.ndarray, a: float) -> tuple[float, float]:
    """The accepted shifts on a fine grid (every sign vector enumerated), walking out from the
    estimate: p(x) = share of sign vectors s with |s·(d − x)| ≥ |Σ(d − x)|."""
    grid = np.arange(-1.5, 1.5 + 1e-12, 0.0005)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(d))))
    shifted = d[:, None] - grid[None, :]  # n × G
    p = np.mean(np.abs(signs @ shifted) >= np.abs(shifted.sum(axis=0)) - 1e-9, axis=0)
    inside = grid[p >= a]
    est = d.mean()
    return float(inside[inside <= est].min()), float(inside[inside >= est].max())


@pytest.mark.parametrize("values", [
    [-1, -1, -1, 0, 0, 0, 1, 0, -1, -1],
    [-0.5, 0.25, -0.75, 0.0, -0.1, -0.3, 0.2, -0.6],
    [1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0],
])
def test_the_interval_equals_brute_force_inversion(values):
    d = np.asarray(values, dtype=float)
    low, high = sign_flip_interval(d, level=0.95)
    b_low, b_high = brute_interval(d, 0.05)
    assert low == pytest.approx(b_low, abs=6e-4) and high == pytest.approx(b_high, abs=6e-4)


@pytest.mark.parametrize("kind", ["hit", "continuous", "many-values"])
def test_zero_is_inside_the_interval_exactly_when_p_is_not_below_the_level(kind):
    rng = np.random.default_rng(5)
    for trial in range(60):
        n = int(rng.integers(5, 120))
        if kind == "hit":
            d = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], size=n, p=[0.3, 0.2, 0.2, 0.2, 0.1])
        elif kind == "continuous":
            d = np.round(rng.normal(-0.05, 0.2, n), 6)
        else:
            d = np.round(rng.choice(np.linspace(-1, 1, 41), size=n), 6)
        p = sign_flip_p_value(d, resamples=2000, seed=trial)
        for level in (0.95, 0.99):
            low, high = sign_flip_interval(d, level=level, p_value=p, resamples=2000, seed=trial)
            assert low <= d.mean() <= high
            assert (low <= 0.0 <= high) == (p >= 1 - level), (trial, p, low, high)


def test_the_issue_example_no_longer_shows_an_interval_excluding_zero_beside_an_inconclusive_status():
    # form=GAP, n = 30: 9 lost hits, 2 gained: Δ = −0.233, p = 0.065 (the bootstrap CI excluded 0)
    d = np.array([-1.0] * 9 + [1.0] * 2 + [0.0] * 19)
    p = sign_flip_p_value(d)
    assert p == pytest.approx(0.0654, abs=1e-4)
    low, high = sign_flip_interval(d, level=0.95, p_value=p)
    assert low < -0.3 and high >= 0.0


def test_judged_rows_are_holm_adjusted_and_their_intervals_agree_with_the_adjusted_p():
    before = hits_results([1] * 80 + [0] * 20)
    after = hits_results([0] * 8 + [1] * 72 + [0] * 20)  # 8 lost hits of 100: raw p = 2·0.5^8
    comparison = run(after, before, GateSettings(fail_on_regression=True))
    judged = [r for r in comparison.rows if r.gated and r.p_value is not None]
    assert len(judged) == 3 and comparison.stats["correction"] == "holm" and comparison.stats["judged_rows"] == 3
    raw = 2 * 0.5 ** 8
    for row in judged:
        assert row.p_value == pytest.approx(raw)
        assert row.p_adjusted == pytest.approx(3 * raw)  # three equal p-values: all × 3
        assert row.ci_level == pytest.approx(1 - 0.05 / 3)
        assert row.ci is not None and row.ci[1] < 0 and row.status == "regressed"
    loose = run(after, before, GateSettings(fail_on_regression=True, correction="none"))
    assert all(r.p_adjusted == pytest.approx(r.p_value) for r in loose.rows if r.gated and r.p_value is not None)


def test_holm_turns_a_borderline_drop_into_a_non_regression():
    # 6 of 100 lost: p = 2·0.5^6 = 0.031 < 0.05 alone, 0.094 after Holm over 3 equal rows
    before = hits_results([1] * 80 + [0] * 20)
    after = hits_results([0] * 6 + [1] * 74 + [0] * 20)
    alone = run(after, before, GateSettings(fail_on_regression=True, correction="none"))
    holm = run(after, before, GateSettings(fail_on_regression=True))
    assert {r.status for r in alone.rows if r.gated} == {"regressed"} and alone.verdict == "fail"
    assert {r.status for r in holm.rows if r.gated} == {"underpowered"} and holm.verdict == "pass"
    for row in holm.rows:
        if row.gated:
            assert row.ci is not None and row.ci[0] <= 0 <= row.ci[1]
            assert row.n_needed is not None and row.n_needed > 100


def test_a_large_significant_drop_fails_whatever_the_mde():
    before = hits_results([1] * 20)
    after = hits_results([0] * 12 + [1] * 8)
    comparison = run(after, before, GateSettings(fail_on_regression=True, max_drop={"hit@5": 0.01}))
    hit = next(r for r in comparison.rows if r.metric == "hit@5" and r.slice == "overall")
    assert hit.mde is not None and hit.mde > 0.01
    assert hit.status == "regressed" and comparison.verdict == "fail"
