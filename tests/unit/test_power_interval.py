"""The comparison's multiple-comparison correction (hand-worked examples) and judged rows in a
comparison. MDE and power: test_power.py; the intervals: test_paired_interval.py."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.stats.multiplicity import adjust_p
from tests.unit.compare_data import hits_results
from tests.unit.test_comparison import run


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


def test_only_the_primary_measure_is_judged_one_sided_and_its_interval_is_the_matching_two_sided_one():
    before = hits_results([1] * 80 + [0] * 20)
    after = hits_results([0] * 8 + [1] * 72 + [0] * 20)  # 8 lost hits of 100: one-sided p = 0.5^8
    comparison = run(after, before, GateSettings(fail_on_regression=True))
    judged = [r for r in comparison.rows if r.gated and r.p_value is not None]
    assert [r.metric for r in judged] == ["hit@5"] and comparison.stats.judged_rows == 1
    assert comparison.stats.ci_level_judged == pytest.approx(0.90)
    (hit,) = judged
    assert hit.p_value == pytest.approx(2 * 0.5 ** 8) and hit.p_one_sided == pytest.approx(0.5 ** 8)
    assert hit.p_adjusted == pytest.approx(0.5 ** 8)  # a family of one: nothing to correct
    assert hit.ci_level == pytest.approx(0.90) and hit.ci is not None and hit.ci[1] < 0 and hit.ci_agrees
    assert hit.status == "regressed" and comparison.verdict == "fail"


def test_with_several_judged_rows_holm_adjusts_the_one_sided_p_values_at_the_bonferroni_level():
    # 6 of 100 lost: one-sided p = 0.5^6 = 0.0156 < 0.05 alone, 0.047 after Holm over 3 equal rows,
    # 0.5^5 = 0.031 for 5 lost, 0.094 after Holm
    before = hits_results([1] * 80 + [0] * 20)
    knobs = {"max_drop": {"recall@5": 0.02, "ndcg@5": 0.02}}
    six = run(hits_results([0] * 6 + [1] * 74 + [0] * 20), before, GateSettings(fail_on_regression=True, **knobs))
    five = run(hits_results([0] * 5 + [1] * 75 + [0] * 20), before, GateSettings(fail_on_regression=True, **knobs))
    assert six.stats.judged_rows == 3 and six.stats.ci_level_judged == pytest.approx(1 - 0.1 / 3)
    for r in six.rows:
        if r.gated:
            assert r.p_adjusted == pytest.approx(3 * 0.5 ** 6) and r.status == "regressed"
            assert r.ci_level == pytest.approx(1 - 0.1 / 3)
    assert six.verdict == "fail"
    assert {r.status for r in five.rows if r.gated} == {"underpowered"} and five.verdict == "pass"
    # Tango's score statistic at 0 is −5/√5 = −2.236, beyond z_{1 − 0.05/3} = 2.128: the score
    # interval excludes 0 while the exact test, Holm-adjusted, does not reject — so the interval is
    # extended to 0 and agrees with the status
    z = NormalDist().inv_cdf(1 - 0.05 / 3)
    assert 5 / math.sqrt(5) > z
    for r in five.rows:
        if r.gated:
            assert r.ci is not None and r.ci[0] < -0.05 and r.ci[1] == 0.0
            assert r.ci_method == "tango+0" and r.ci_agrees is True
            assert r.n_needed is not None and r.n_needed > 100
    alone = run(hits_results([0] * 5 + [1] * 75 + [0] * 20), before, GateSettings(fail_on_regression=True))
    (hit,) = [r for r in alone.rows if r.gated]  # judged alone, the same 5 lost are significant
    assert hit.p_adjusted == pytest.approx(1 / 32) and hit.status == "regressed" and hit.ci_method == "tango"
