"""compare.gate: row statuses, which rows are judged, floors and max drops per metric and slice."""

from __future__ import annotations

import pytest

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings, parse_assignment, parse_key, row_status
from retrieval_gate.compare.model import Comparison
from retrieval_gate.errors import UsageError
from retrieval_gate.score.results import Results
from tests.unit.compare_data import HEADLINE, make_case, make_results

BASE = {"baseline": 0.8, "current": 0.7, "n": 300, "tolerance": 0.02, "floor": None, "alpha": 0.05,
        "require_significance": True}


@pytest.mark.parametrize(("changes", "status"), [
    ({"delta": -0.10, "p_value": 0.001}, "regressed"),
    ({"delta": -0.10, "p_value": 0.20}, "inconclusive"),
    ({"delta": -0.10, "p_value": 0.20, "require_significance": False}, "regressed"),
    ({"delta": -0.10, "p_value": 0.05}, "inconclusive"),  # p < alpha, strictly
    ({"delta": 0.10, "p_value": 0.001}, "improved"),
    ({"delta": 0.10, "p_value": 0.30}, "inconclusive"),
    ({"delta": -0.02, "p_value": 0.0001}, "ok"),  # a drop of exactly max_drop is tolerated
    ({"delta": -0.0201, "p_value": 0.0001}, "regressed"),
    ({"delta": 0.0, "p_value": 1.0}, "ok"),
    ({"delta": -0.10, "p_value": 0.001, "tolerance": 0.2}, "ok"),
    ({"delta": 0.0, "p_value": 1.0, "floor": 0.75}, "below_floor"),
    ({"delta": 0.0, "p_value": 1.0, "floor": 0.7}, "ok"),  # current == floor meets it
    ({"delta": None, "p_value": None, "baseline": None}, "new"),
    ({"delta": None, "p_value": None, "baseline": None, "floor": 0.9}, "below_floor"),
    ({"delta": None, "p_value": None, "current": None}, "missing"),
    ({"delta": None, "p_value": None, "n": 0}, "inconclusive"),
    # no case changed: nothing to judge, whatever the MDE
    ({"delta": 0.0, "p_value": 1.0, "changed": False, "mde": 0.3}, "unchanged"),
    ({"delta": 0.0, "p_value": 1.0, "changed": False, "floor": 0.75}, "below_floor"),
    # underpowered only where a drop was seen, not significant, and the MDE exceeds the tolerance
    ({"delta": -0.10, "p_value": 0.20, "mde": 0.25}, "underpowered"),
    ({"delta": -0.01, "p_value": 0.60, "mde": 0.25}, "underpowered"),
    ({"delta": -0.10, "p_value": 0.20, "mde": float("inf")}, "underpowered"),  # nothing detectable at n
    ({"delta": -0.10, "p_value": 0.20, "mde": 0.015}, "inconclusive"),  # this n could have seen it
    ({"delta": -0.01, "p_value": 0.60, "mde": 0.015}, "ok"),
    ({"delta": 0.10, "p_value": 0.30, "mde": 0.25}, "inconclusive"),  # a gain is never underpowered
    ({"delta": 0.01, "p_value": 0.30, "mde": 0.25}, "ok"),
    ({"delta": -0.10, "p_value": 0.001, "mde": 0.25}, "regressed"),  # significant: the MDE does not matter
])
def test_row_status(changes, status):
    assert row_status(**{**BASE, **changes}) == status


@pytest.mark.parametrize(("key", "parsed"), [
    ("hit@5", ("hit@5", "overall")),
    ("nDCG@10", ("ndcg@10", "overall")),
    ("hit@5:locale=pt-BR", ("hit@5", "locale=pt-BR")),
    ("recall_5:tag.team=search", ("recall@5", "tag.team=search")),
    ("abstention:no-answer", ("abstention", "no-answer")),
])
def test_gate_keys(key, parsed):
    assert parse_key(key) == parsed


@pytest.mark.parametrize(("text", "parsed"), [
    ("hit@5=0.8", ("hit@5", 0.8)),
    ("hit@5:locale=pt-BR=0.7", ("hit@5:locale=pt-BR", 0.7)),
])
def test_flag_assignments(text, parsed):
    assert parse_assignment(text, flag="--floor") == parsed


@pytest.mark.parametrize("text", ["hit@5", "=0.8", "hit@5=high", "hit@5:locale=pt-BR"])
def test_bad_flag_assignments(text):
    with pytest.raises(UsageError, match="--floor"):
        parse_assignment(text, flag="--floor")


def two_slices(en: tuple[int, int], pt: tuple[int, int]) -> tuple[Results, Results]:
    """en-US and pt-BR cases, 150 each: (hits before, hits after) per locale; the first cases of a
    locale lose their hit when ``after < before``."""
    before, after = [], []
    for locale, (hits_before, hits_after) in (("en-US", en), ("pt-BR", pt)):
        for i in range(150):
            slices = ["overall", f"locale={locale}"]
            cid = f"{locale}-{i:03d}"
            before.append(make_case(cid, dict.fromkeys(HEADLINE, float(i < hits_before)), slices=slices))
            lost = hits_before - hits_after
            after.append(make_case(cid, dict.fromkeys(HEADLINE, float(lost <= i < hits_before)), slices=slices))
    return make_results(after), make_results(before)


def judge(current: Results, baseline: Results, **gate) -> Comparison:
    base = update_baseline(baseline=None, results=baseline, sha=None, ref=None, timestamp=None)
    return compare(results=current, baseline=base, gate=GateSettings(**gate), resamples=2_000)


def test_a_slice_regression_is_reported_but_not_judged_unless_named():
    current, baseline = two_slices(en=(120, 120), pt=(120, 105))  # pt-BR loses 15 of 150; overall −0.05
    comparison = judge(current, baseline, fail_on_regression=True, default_max_drop=0.06)
    statuses = {(r.metric, r.slice): (r.status, r.gated) for r in comparison.rows}
    assert statuses[("hit@5", "locale=pt-BR")] == ("regressed", False)
    assert statuses[("hit@5", "overall")] == ("ok", True)  # −0.05 within the 0.06 tolerance
    assert comparison.verdict == "pass"
    named = judge(current, baseline, fail_on_regression=True, default_max_drop=0.06,
                  max_drop={"hit@5:locale=pt-BR": 0.05})
    assert named.verdict == "fail"
    assert named.failures == ["hit@5 on locale=pt-BR: dropped by 0.100 (15 lost, 0 gained of 150 paired; one-sided "
                              "p < 0.001, Holm-adjusted over 2 judged rows), more than the max drop 0.05"]


def test_a_bare_metric_max_drop_sets_the_tolerance_on_every_slice_and_judges_overall():
    current, baseline = two_slices(en=(120, 120), pt=(120, 105))
    comparison = judge(current, baseline, fail_on_regression=True, max_drop={"hit@5": 0.2})
    rows = {(r.metric, r.slice): r for r in comparison.rows}
    assert rows[("hit@5", "overall")].max_drop == 0.2 and rows[("hit@5", "overall")].status == "ok"
    assert rows[("hit@5", "locale=pt-BR")].status == "ok"
    # recall@5 and nDCG@5 are reported beside hit@5, not judged: their drop fails nothing …
    assert (rows[("recall@5", "overall")].status, rows[("recall@5", "overall")].gated) == ("regressed", False)
    assert comparison.verdict == "pass"
    # … unless a knob names them
    named = judge(current, baseline, fail_on_regression=True, max_drop={"hit@5": 0.2, "recall@5": 0.02})
    assert named.verdict == "fail"
    assert [f.split(":")[0] for f in named.failures] == ["recall@5 on overall"]


def test_floors_fail_even_without_fail_on_regression():
    current, baseline = two_slices(en=(120, 120), pt=(120, 120))  # nothing changes: 0.8 everywhere
    assert judge(current, baseline, floors={"hit@5": 0.8}).verdict == "pass"
    failing = judge(current, baseline, floors={"hit@5": 0.85, "ndcg@5:locale=pt-BR": 0.75})
    assert failing.verdict == "fail"
    assert failing.failures == ["hit@5 on overall: 0.800 is below the floor 0.85 (n=300)"]
    rows = {(r.metric, r.slice): r for r in failing.rows}
    assert rows[("hit@5", "overall")].status == "below_floor"
    assert rows[("ndcg@5", "locale=pt-BR")].floor == 0.75 and rows[("ndcg@5", "locale=pt-BR")].gated
    assert failing.regressed


def test_a_per_slice_floor_is_judged_on_that_slice_only():
    current, baseline = two_slices(en=(150, 150), pt=(90, 90))  # en 1.0, pt 0.6, overall 0.8
    comparison = judge(current, baseline, floors={"hit@5:locale=pt-BR": 0.7, "hit@5": 0.75})
    assert comparison.failures == ["hit@5 on locale=pt-BR: 0.600 is below the floor 0.7 (n=150)"]


def test_a_floor_on_a_slice_without_values_fails_clearly():
    current, baseline = two_slices(en=(120, 120), pt=(120, 120))
    comparison = judge(current, baseline, floors={"hit@5:locale=es-419": 0.5})
    assert comparison.verdict == "fail"
    assert comparison.failures == ["hit@5 on locale=es-419: no value in the results, so the floor 0.5 is not met"]


@pytest.mark.parametrize("gate", [{"floors": {"hit@7": 0.5}}, {"max_drop": {"mrr@5:locale=pt-BR": 0.1}},
                                  {"floors": {"hit@5": 1.5}}, {"max_drop": {"hit@5": -0.1}},
                                  {"floors": {"bogus": 0.5}}])
def test_knobs_naming_unmeasured_metrics_or_bad_values_are_usage_errors(gate):
    current, baseline = two_slices(en=(120, 120), pt=(120, 120))
    with pytest.raises(UsageError):
        judge(current, baseline, **gate)


def test_metric_names_in_knobs_are_normalised():
    current, baseline = two_slices(en=(120, 120), pt=(120, 120))
    comparison = judge(current, baseline, floors={"nDCG@5": 0.9})
    assert comparison.failures == ["nDCG@5 on overall: 0.800 is below the floor 0.9 (n=300)"]


def test_without_significance_any_drop_beyond_max_drop_fails():
    current, baseline = two_slices(en=(120, 118), pt=(120, 120))  # 2 of 300 lost: −0.0067, p = 0.5
    assert judge(current, baseline, fail_on_regression=True, default_max_drop=0.005).verdict == "pass"
    strict = judge(current, baseline, fail_on_regression=True, default_max_drop=0.005, require_significance=False)
    assert strict.verdict == "fail"
    assert "p =" not in strict.failures[0] and "not required" in strict.failures[0]


def test_the_gate_knobs_in_force_are_recorded():
    current, baseline = two_slices(en=(120, 120), pt=(120, 120))
    comparison = judge(current, baseline, fail_on_regression=True, alpha=0.01, floors={"hit@5": 0.5})
    assert comparison.gate.fail_on_regression is True
    assert comparison.gate.floors == {"hit@5": 0.5}
    assert comparison.stats.alpha == 0.01 and comparison.stats.ci_level == pytest.approx(0.99)
    assert comparison.stats.resamples == 2_000
