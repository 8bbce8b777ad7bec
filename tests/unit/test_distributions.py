"""stats.distributions against scipy (the reference, imported by the tests only) and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom
from scipy.stats import t as student_t

from retrieval_gate.stats.distributions import (
    binomial_cdf_walk,
    find_root,
    log_binomial_pmf,
    normal_quantile,
    sign_test_critical,
    t_quantile,
)
from retrieval_gate.stats.multiplicity import adjust_p


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 40, 41, 299, 9_999])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.95, 0.975, 1 - 0.05 / 6, 0.025])
def test_t_quantile_matches_scipy(df, p):
    assert t_quantile(p, df) == pytest.approx(float(student_t.ppf(p, df)), rel=1e-9, abs=1e-12)


def test_t_quantile_by_hand():
    assert t_quantile(0.75, 1) == pytest.approx(1.0)  # Cauchy: tan(π/4)
    assert t_quantile(0.975, 2) == pytest.approx(math.sqrt(2) * 0.95 / math.sqrt(1 - 0.95 ** 2))  # closed form, ν = 2
    assert t_quantile(0.5, 7) == 0.0


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 3, 0.1, 0.0625, 0.125, 0.2, 0.01])
def test_the_sign_test_critical_table_matches_the_exact_binomial(alpha):
    k = sign_test_critical(512, alpha)
    for m in range(512):
        tail = binom.cdf(np.arange(-1, m + 1), m, 0.5)  # P(Bin(m, ½) ≤ k) for k = −1…m
        ok = [j - 1 for j in range(m + 2) if 2 * tail[j] < alpha]
        assert k[m] == (max(ok) if ok else -1), m
    # the dyadic edge, by hand: 2·P(Bin(5, ½) ≤ 0) = 1/16 = 0.0625 is not below 0.0625
    assert sign_test_critical(64, 0.0625)[5] == -1 and sign_test_critical(64, 0.0625)[6] == 0


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 0.87, 1.0])
def test_the_binomial_walk_matches_scipy(p):
    ks = np.array([-1, 0, 0, 1, 3, 2, 2, 5, 9, 9, 10])
    got = binomial_cdf_walk(ks, 7, p)
    assert got == pytest.approx(binom.cdf(ks, np.arange(7, 7 + len(ks)), p), abs=1e-12)
    assert np.exp(log_binomial_pmf(np.array([0, 3, 7]), np.array([7, 7, 7]), 0.3)) == pytest.approx(
        binom.pmf([0, 3, 7], 7, 0.3))


def test_find_root_and_the_normal_quantile():
    assert find_root(lambda x: x * x - 2, 0.0, 2.0) == pytest.approx(math.sqrt(2), abs=1e-12)
    assert normal_quantile(0.975) == pytest.approx(1.959963984540054)


def test_benjamini_hochberg_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.5 (m = 4): 4·0.01/1 = 0.04, 4·0.02/2 = 0.04, 4·0.03/3 = 0.04, 0.5
    assert adjust_p([0.03, 0.5, 0.01, 0.02], "bh") == pytest.approx([0.04, 0.5, 0.04, 0.04])
    # a later smaller ratio carries back: 0.04·3/1 = 0.12 > 0.05·3/3 = 0.05 → 0.05
    assert adjust_p([0.04, 0.049, 0.05], "bh") == pytest.approx([0.05, 0.05, 0.05])
