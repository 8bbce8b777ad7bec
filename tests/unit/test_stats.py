"""stats.sign_flip: the paired bootstrap CI and the sign-flip p-value, checked against independent
computations (brute-force enumeration, scipy), and the gate's behaviour in seeded simulations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest, permutation_test

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.stats import sign_flip as stats
from retrieval_gate.stats.sign_flip import sign_flip_tests
from tests.reference import (
    bootstrap_ci,
    bootstrap_means,
    paired_bootstrap_ci,
    paired_stats,
    sign_flip_p_value,
    sign_flip_p_values,
)
from tests.unit.compare_data import System


def brute_force_p(diffs: list[float]) -> float:
    """Two-sided sign-flip p-value by enumerating every sign vector (independent of the code)."""
    observed = abs(sum(diffs))
    total = hits = 0
    for signs in itertools.product((-1, 1), repeat=len(diffs)):
        total += 1
        hits += abs(sum(s * abs(d) for s, d in zip(signs, diffs, strict=True))) >= observed - 1e-12
    return hits / total


def convolution_p(diffs: list[float]) -> float:
    """The same law built one case at a time (a dict of sum → probability): independent of the
    code's grouping of equal magnitudes into binomials."""
    law = {0.0: 1.0}
    for d in diffs:
        step: dict[float, float] = {}
        for total, prob in law.items():
            for signed in (abs(d), -abs(d)):
                key = round(total + signed, 9)
                step[key] = step.get(key, 0.0) + prob / 2
        law = step
    observed = abs(sum(diffs))
    return sum(prob for total, prob in law.items() if abs(total) >= observed - 1e-8)


@pytest.mark.parametrize("diffs", [
    [-1.0],
    [-1.0, -1.0],
    [-1.0, -1.0, -1.0, 1.0],
    [-0.5, 0.25, -0.125, -1.0, 0.3, -0.2],
    [-0.63093, -0.386853, 0.5, -1.0, -0.130930, 0.0, 0.0, -0.2, -0.3, 0.1, -0.05, -0.9],
])
def test_exact_p_value_equals_brute_force_enumeration(diffs):
    p, methods = sign_flip_p_values(np.asarray(diffs))
    assert methods == ["exact"]
    assert p[0] == pytest.approx(brute_force_p(diffs), abs=1e-12)


@pytest.mark.parametrize(("losses", "gains", "zeros"), [
    (20, 5, 100), (30, 30, 10), (50, 31, 0), (400, 300, 9000), (12, 0, 300), (9, 3, 17), (3000, 2890, 100),
])
def test_hit_differences_get_the_exact_sign_test(losses, gains, zeros):
    diffs = [-1.0] * losses + [1.0] * gains + [0.0] * zeros
    p, methods = sign_flip_p_values(np.asarray(diffs))
    assert methods == ["exact"]
    assert p[0] == pytest.approx(binomtest(gains, losses + gains, 0.5).pvalue, rel=1e-9)


@pytest.mark.parametrize("diffs", [
    [-1.0] * 20 + [-0.5] * 7 + [0.5] * 3 + [1.0] * 9,  # recall@k-like: two magnitudes
    [-0.63093] * 5 + [-0.36907] * 4 + [0.5] * 6 + [-1.0] * 3 + [0.130930] * 2,
])
def test_exact_law_over_repeated_magnitudes_equals_a_case_by_case_convolution(diffs):
    p, methods = sign_flip_p_values(np.asarray(diffs))
    assert methods == ["exact"]
    assert p[0] == pytest.approx(convolution_p(diffs), abs=1e-9)


def test_monte_carlo_p_value_agrees_with_scipy_permutation_test():
    rng = np.random.default_rng(7)
    diffs = np.round(rng.normal(0.08, 0.5, size=60), 6)
    ours, methods = sign_flip_p_values(diffs, resamples=20_000)
    theirs = permutation_test((diffs,), np.sum, permutation_type="samples", n_resamples=100_000,
                              alternative="two-sided", random_state=1).pvalue
    assert methods == ["monte-carlo"]
    assert ours[0] == pytest.approx(theirs, abs=0.01)
    assert 0.05 < theirs < 0.95  # the comparison is not decided by a trivial 0 or 1


def test_grouped_and_per_case_sign_flips_give_the_same_law():
    """Repeated magnitudes are flipped per group (binomial draws); the same data with a jitter
    that makes every magnitude unique is flipped case by case. Same law, same p within MC error."""
    rng = np.random.default_rng(3)
    grouped = rng.choice([-0.5, -0.25, 0.25, 0.5, -0.130930, 0.0], size=400, p=[.1, .15, .15, .1, .05, .45])
    jittered = grouped + np.where(grouped != 0, rng.uniform(0, 1e-7, size=400), 0.0)
    assert len(np.unique(np.abs(grouped))) * stats.BINOMIAL_COST <= 400
    assert len(np.unique(np.abs(jittered))) * stats.BINOMIAL_COST > 400
    p_grouped = sign_flip_p_value(grouped, resamples=20_000)
    p_cases = sign_flip_p_value(jittered, resamples=20_000)
    assert 0.01 < p_grouped < 0.9
    assert p_grouped == pytest.approx(p_cases, abs=0.015)


def naive_bootstrap_ci(diffs: np.ndarray, *, resamples: int, level: float, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = [rng.choice(diffs, size=len(diffs), replace=True).mean() for _ in range(resamples)]
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


@pytest.mark.parametrize("kind", ["hit", "continuous", "mostly-unchanged"])
def test_bootstrap_ci_agrees_with_a_naive_loop(kind):
    rng = np.random.default_rng(11)
    if kind == "hit":  # three distinct values: the multinomial path
        diffs = rng.choice([-1.0, 0.0, 1.0], size=200, p=[0.15, 0.75, 0.10])
    elif kind == "continuous":  # all distinct: n picks per resample
        diffs = rng.normal(-0.03, 0.2, size=200)
    else:  # 70% zeros: K ~ Bin(n, m/n) picks among the changed cases
        diffs = rng.normal(-0.1, 0.3, size=200) * (rng.random(200) < 0.3)
    ours = paired_bootstrap_ci(diffs, resamples=10_000, level=0.95)
    theirs = naive_bootstrap_ci(diffs, resamples=10_000, level=0.95, seed=5)
    assert ours[0] < diffs.mean() < ours[1]
    assert ours == pytest.approx(theirs, abs=0.006)


def test_bootstrap_chunks_cover_every_resample(monkeypatch):
    monkeypatch.setattr(stats, "CHUNK_ELEMENTS", 1000)  # 1000 // 300 = 3 resamples a chunk
    diffs = np.random.default_rng(1).normal(size=(300, 3))
    means = bootstrap_means(diffs, resamples=1001)
    assert means.shape == (1001, 3)
    assert np.all(np.isfinite(means)) and np.all(means.std(axis=0) > 0)


@pytest.mark.parametrize(("diffs", "p"), [([-1.0] + [0.0] * 28, 1.0), ([-1.0, -1.0] + [0.0] * 27, 0.5)])
def test_one_or_two_changed_cases_out_of_29_are_not_significant(diffs, p):
    (stat,) = paired_stats(np.asarray(diffs))
    assert stat.n == 29
    assert stat.p_value == p
    assert stat.delta == pytest.approx(sum(diffs) / 29)


def test_no_difference_gives_p_one_and_a_zero_ci():
    (stat,) = paired_stats(np.zeros(50))
    assert (stat.delta, stat.ci, stat.p_value) == (0.0, (0.0, 0.0), 1.0)


def test_same_inputs_give_the_same_numbers_and_the_seed_matters():
    rng = np.random.default_rng(2)
    diffs = np.round(rng.normal(0, 0.3, size=(500, 4)), 6)
    first = paired_stats(diffs, seed=4)
    assert paired_stats(diffs.copy(), seed=4) == first
    other = paired_stats(diffs, seed=5)
    assert [s.ci for s in other] != [s.ci for s in first]
    assert [s.p_value for s in other] != [s.p_value for s in first]


def test_bootstrap_ci_covers_the_true_mean_at_about_the_nominal_rate():
    """400 independent data sets of 300 paired cases from a known population (mean 0.02), one per
    column: the 95% CI should contain 0.02 in about 95% of them."""
    rng = np.random.default_rng(2024)
    values, probs = np.array([-1.0, 0.0, 1.0]), np.array([0.10, 0.78, 0.12])
    true_mean = float(values @ probs)
    data = rng.choice(values, size=(300, 400), p=probs)
    ci = bootstrap_ci(data, level=0.95, resamples=10_000)
    coverage = float(np.mean((ci[:, 0] <= true_mean) & (true_mean <= ci[:, 1])))
    assert 0.92 <= coverage <= 0.975


@pytest.mark.parametrize("kind", ["metric-like", "continuous"])
def test_p_values_are_valid_under_the_null(kind):
    """Symmetric differences (H0 true), 1000 data sets of 80 cases (one per column): P(p ≤ 0.05)
    must not exceed 0.05 beyond sampling error, nor collapse (a test that never rejects)."""
    rng = np.random.default_rng(99)
    if kind == "metric-like":  # a few nDCG-like magnitudes: exact laws and grouped Monte Carlo
        magnitudes = rng.choice([0.0, 0.13093, 0.386853, 0.5, 1.0], size=(80, 1000), p=[.5, .15, .15, .1, .1])
    else:  # all distinct: Monte Carlo, one sign per case
        magnitudes = np.abs(rng.normal(size=(80, 1000))) * (rng.random((80, 1000)) < 0.5)
    data = magnitudes * rng.choice([-1.0, 1.0], size=magnitudes.shape)
    p, _ = sign_flip_p_values(data, resamples=2_000)
    assert 0.025 <= float(np.mean(p <= 0.05)) <= 0.065


# --- the gate in simulation --------------------------------------------------------------------

def gate_verdicts(*, n: int, seeds: range, gate: GateSettings, broken: int = 0, noise: float = 0.3) -> list[str]:
    """For each seed: one system, a baseline run and a current run (of the same system, or with
    ``broken`` cases that it always found pushed out of the top 10), compared under ``gate``."""
    verdicts = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        system = System(rng, n)
        before = system.run(rng, noise=noise)
        if broken:
            always_found = np.flatnonzero(system.ranks[:, 0] <= 2)[:broken]
            assert len(always_found) == broken
            system = system.broken(always_found)
        after = system.run(rng, noise=noise)
        baseline = update_baseline(baseline=None, results=before, sha=None, ref=None, timestamp=None)
        verdicts.append(compare(results=after, baseline=baseline, gate=gate, resamples=2_000).verdict)
    return verdicts


@pytest.mark.parametrize(("n", "max_drop", "seeds"), [(29, 0.02, 200), (60, 0.0, 200)])
def test_gate_false_alarm_rate_under_the_null_is_at_most_alpha(n, max_drop, seeds):
    """Two runs of the same system with case-level noise: the gate (fail on regression, p < 0.05,
    three headline metrics judged) must fail in no more than 5% of the simulations — with the
    default max drop at n=29 and with no max drop at all (significance alone) at n=60."""
    gate = GateSettings(fail_on_regression=True, default_max_drop=max_drop)
    verdicts = gate_verdicts(n=n, seeds=range(seeds), gate=gate)
    assert verdicts.count("fail") / len(verdicts) <= gate.alpha


def test_without_the_significance_requirement_small_samples_raise_false_alarms():
    """The control for the test above: at n=29 one case flipping is a 0.034 drop, so a gate that
    does not ask for significance fails often under the null."""
    gate = GateSettings(fail_on_regression=True, require_significance=False)
    verdicts = gate_verdicts(n=29, seeds=range(100), gate=gate)
    assert verdicts.count("fail") / len(verdicts) > 0.2


def test_a_true_five_point_drop_over_300_cases_is_caught():
    gate = GateSettings(fail_on_regression=True)
    verdicts = gate_verdicts(n=300, seeds=range(1000, 1020), gate=gate, broken=15)
    assert verdicts.count("fail") == len(verdicts)


@pytest.mark.parametrize(("lost", "gained", "less", "greater"), [
    (5, 0, 1 / 32, 1.0),  # the limit at α = 0.05: (½)⁵
    (4, 0, 1 / 16, 1.0),
    (3, 3, 42 / 64, 42 / 64),  # P(B ≤ 3), B ~ Bin(6, ½) = (1 + 6 + 15 + 20)/64
    (6, 1, 8 / 128, 127 / 128),  # P(B ≤ 1), B ~ Bin(7, ½) = (1 + 7)/128
    (0, 5, 1.0, 1 / 32),
])
def test_one_sided_sign_test_p_values_by_hand(lost, gained, less, greater):
    d = np.array([-1.0] * lost + [1.0] * gained + [0.0] * (41 - lost - gained))
    tests = sign_flip_tests(d)
    assert tests.less[0] == pytest.approx(less, abs=1e-15)
    assert tests.greater[0] == pytest.approx(greater, abs=1e-15)
    assert tests.methods == ["exact"]


def test_one_sided_p_values_of_several_magnitudes_are_the_exact_law_enumerated_by_hand():
    # differences −0.5, −0.25, +0.25: the 8 sign vectors give sums ±0.5 ± 0.25 ± 0.25 ∈
    # {−1, −0.5 (×2), 0 (×2), 0.5 (×2), 1}; S = −0.5, so P(S* ≤ S) = 3/8, P(S* ≥ S) = 7/8
    tests = sign_flip_tests(np.array([[-0.5], [-0.25], [0.25], [0.0]]))
    assert (tests.less[0], tests.greater[0]) == (pytest.approx(3 / 8), pytest.approx(7 / 8))
    assert tests.two_sided[0] == pytest.approx(6 / 8)


def test_one_sided_p_values_exact_and_monte_carlo_match_a_brute_force_enumeration():
    rng = np.random.default_rng(3)
    diffs = np.round(rng.normal(-0.1, 0.3, size=12), 6)
    observed = diffs.sum()
    sums = [sum(s * abs(v) for s, v in zip(signs, diffs, strict=True))
            for signs in itertools.product((-1, 1), repeat=len(diffs))]
    less = sum(x <= observed + 1e-9 for x in sums) / len(sums)
    greater = sum(x >= observed - 1e-9 for x in sums) / len(sums)
    exact = sign_flip_tests(diffs)
    assert exact.methods == ["exact"]
    assert (exact.less[0], exact.greater[0]) == (pytest.approx(less), pytest.approx(greater))
    _, below, above = stats._monte_carlo(diffs[:, None], resamples=40_000, seed=1)
    assert below[0] == pytest.approx(less, abs=0.01) and above[0] == pytest.approx(greater, abs=0.01)
