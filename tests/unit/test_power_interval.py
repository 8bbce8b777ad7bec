"""The comparison's multiple-comparison correction (hand-worked examples) and judged rows in a
comparison. MDE and power: test_power.py; the intervals: test_paired_interval.py."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.compare.power import adjust_p
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


def test_judged_rows_are_holm_adjusted_and_their_intervals_are_at_the_bonferroni_level():
    before = hits_results([1] * 80 + [0] * 20)
    after = hits_results([0] * 8 + [1] * 72 + [0] * 20)  # 8 lost hits of 100: raw p = 2·0.5^8
    comparison = run(after, before, GateSettings(fail_on_regression=True))
    judged = [r for r in comparison.rows if r.gated and r.p_value is not None]
    assert len(judged) == 3 and comparison.stats["correction"] == "holm" and comparison.stats["judged_rows"] == 3
    assert comparison.stats["ci_level_judged"] == pytest.approx(1 - 0.05 / 3)
    raw = 2 * 0.5 ** 8
    for row in judged:
        assert row.p_value == pytest.approx(raw)
        assert row.p_adjusted == pytest.approx(3 * raw)  # three equal p-values: all × 3
        assert row.ci_level == pytest.approx(1 - 0.05 / 3)
        assert row.ci is not None and row.ci[1] < 0 and row.status == "regressed" and row.ci_agrees
    loose = run(after, before, GateSettings(fail_on_regression=True, correction="none"))
    assert all(r.p_adjusted == pytest.approx(r.p_value) for r in loose.rows if r.gated and r.p_value is not None)
    assert all(r.ci_level == pytest.approx(0.95) for r in loose.rows if r.gated)  # no correction: alpha


def test_holm_turns_a_borderline_drop_into_a_non_regression_and_the_interval_is_extended_to_zero():
    # 6 of 100 lost: p = 2·0.5^6 = 0.031 < 0.05 alone, 0.094 after Holm over 3 equal rows
    before = hits_results([1] * 80 + [0] * 20)
    after = hits_results([0] * 6 + [1] * 74 + [0] * 20)
    alone = run(after, before, GateSettings(fail_on_regression=True, correction="none"))
    holm = run(after, before, GateSettings(fail_on_regression=True))
    assert {r.status for r in alone.rows if r.gated} == {"regressed"} and alone.verdict == "fail"
    assert {r.status for r in holm.rows if r.gated} == {"underpowered"} and holm.verdict == "pass"
    # Tango's score statistic at 0 is −6/√6 = −2.449, beyond z_{1 − 0.05/6} = 2.394: the score interval
    # excludes 0 while the exact test, Holm-adjusted, does not reject — so the interval is extended
    # to 0 and agrees with the status
    z = NormalDist().inv_cdf(1 - 0.05 / 6)
    assert 6 / math.sqrt(6) > z
    for row in holm.rows:
        if row.gated:
            assert row.ci is not None and row.ci[0] < -0.06 and row.ci[1] == 0.0
            assert row.ci_method == "tango+0" and row.ci_agrees is True
            assert row.n_needed is not None and row.n_needed > 100
    for row in alone.rows:  # uncorrected, the same data is significant and its interval untouched
        if row.gated:
            assert row.ci is not None and row.ci[1] < 0 and row.ci_method == "tango" and row.ci_agrees


def test_a_large_significant_drop_fails_whatever_the_mde():
    before = hits_results([1] * 20)
    after = hits_results([0] * 12 + [1] * 8)
    comparison = run(after, before, GateSettings(fail_on_regression=True, max_drop={"hit@5": 0.01}))
    hit = next(r for r in comparison.rows if r.metric == "hit@5" and r.slice == "overall")
    assert hit.mde is not None and hit.mde > 0.01
    assert hit.status == "regressed" and comparison.verdict == "fail"
