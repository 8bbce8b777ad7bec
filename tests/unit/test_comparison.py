"""compare.comparison: rows (full-set means, paired delta), statuses, added / removed cases,
config changes, lost / gained hits. Expected numbers are worked out by hand in each test."""

from __future__ import annotations

import json
from statistics import NormalDist

import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.compare.model import Comparison, ComparisonRow
from retrieval_gate.score.results import Results
from tests.unit.compare_data import HEADLINE, hits_results, make_case, make_results


def as_baseline(results: Results) -> Baseline:
    return update_baseline(baseline=None, results=results, sha="base123", ref="main", timestamp="2026-05-01T00:00:00Z")


def run(current: Results, baseline: Results | Baseline, gate: GateSettings | None = None) -> Comparison:
    base = baseline if isinstance(baseline, Baseline) else as_baseline(baseline)
    return compare(results=current, baseline=base, gate=gate or GateSettings(), resamples=2_000)


def row(comparison: Comparison, metric: str, slice_name: str = "overall") -> ComparisonRow:
    (found,) = [r for r in comparison.rows if r.metric == metric and r.slice == slice_name]
    return found


def test_rows_carry_full_set_means_and_the_paired_delta():
    # baseline a,b,c,d: hits 1,1,0,0 · current b,c,d,e: hits 0,1,1,1 · paired b,c,d: −1,+1,+1
    before = make_results([make_case(c, dict.fromkeys(HEADLINE, v)) for c, v in zip("abcd", (1, 1, 0, 0), strict=True)])
    after = make_results([make_case(c, dict.fromkeys(HEADLINE, v)) for c, v in zip("bcde", (0, 1, 1, 1), strict=True)])
    comparison = run(after, before)
    hit = row(comparison, "hit@5")
    assert (hit.baseline, hit.n_baseline, hit.current, hit.n_current) == (0.5, 4, 0.75, 4)
    assert hit.n == 3
    assert hit.delta == pytest.approx(1 / 3)
    assert hit.p_value == pytest.approx(1.0)  # 3 non-zero ±1 differences: P(|S*| ≥ 1) = 1
    assert comparison.cases_added == ["e"] and comparison.cases_removed == ["a"]
    assert comparison.n_paired == 3
    assert (comparison.baseline_sha, comparison.baseline_ref) == ("base123", "main")


def test_identical_runs_are_ok_like_for_like_and_pass():
    results = hits_results([1, 0, 1, 1, 0] * 10)
    comparison = run(results, results, GateSettings(fail_on_regression=True, floors={"hit@5": 0.5}))
    assert comparison.like_for_like and comparison.config_changes == []
    # nothing changed: every row is "unchanged", p = 1, and the interval is Tango's at zero counts,
    # ±z²/(n + z²) — not a zero-width [0, 0]. hit@5, the one judged row, is tested one-sided at 0.05
    # and carries the matching two-sided 90 % interval; recall@5 and nDCG@5 are reported at 95 %
    assert {r.status for r in comparison.rows} == {"unchanged"}
    assert all((r.delta, r.p_value, r.n_changed) == (0.0, 1.0, 0) for r in comparison.rows)
    for r in comparison.rows:
        level = 0.90 if r.gated else 0.95
        z = NormalDist().inv_cdf(1 - (1 - level) / 2)
        assert r.ci == pytest.approx((-z * z / (50 + z * z), z * z / (50 + z * z)), abs=1e-9)
        assert r.ci_level == pytest.approx(level) and r.ci_method == "tango"
    assert [r.metric for r in comparison.rows if r.gated] == ["hit@5"]
    # the MDE prior where nothing changed: only lost cases change, M ~ Bin(50, δ). The judged row's
    # one-sided exact sign test at 0.05 rejects once M ≥ 5 (0.5^5 = 0.031 < 0.05 ≤ 0.5^4), so
    # power(δ) = P(Bin(50, δ) ≥ 5); a reported row's two-sided test at 0.05 needs M ≥ 6
    # (2·0.5^6 = 0.031 < 0.05 ≤ 2·0.5^5), power(δ) = P(Bin(50, δ) ≥ 6)
    judged = brentq(lambda d: binom.sf(4, 50, d) - 0.8, 1e-9, 1 - 1e-9, xtol=1e-13)
    reported = brentq(lambda d: binom.sf(5, 50, d) - 0.8, 1e-9, 1 - 1e-9, xtol=1e-13)
    assert all(r.mde == pytest.approx(judged if r.gated else reported, abs=1e-9) and r.mde_method == "prior"
               for r in comparison.rows)
    assert all(r.n_needed is None for r in comparison.rows)
    assert (comparison.verdict, comparison.regressed, comparison.failures) == ("pass", False, [])
    assert comparison.lost_hits == comparison.gained_hits == []
    json.dumps(comparison.model_dump(mode="json"), allow_nan=False)


def test_unrounded_current_scores_pair_exactly_with_the_rounded_baseline():
    ndcg = 0.6309297535714575  # stored as 0.63093 in the baseline
    results = make_results([make_case(f"q{i}", {"hit@5": 1.0, "recall@5": 1.0, "ndcg@5": ndcg}) for i in range(20)])
    nd = row(run(results, results), "ndcg@5")
    assert (nd.delta, nd.p_value, nd.status) == (0.0, 1.0, "unchanged")


@pytest.mark.parametrize("lost", [1, 2])
def test_one_or_two_lost_hits_out_of_29_are_underpowered_not_regressed(lost):
    before = hits_results([1] * 29)
    after = hits_results([0] * lost + [1] * (29 - lost))
    comparison = run(after, before, GateSettings(fail_on_regression=True))
    hit = row(comparison, "hit@5")
    assert hit.delta == pytest.approx(-lost / 29)
    assert hit.delta < -0.02
    assert hit.p_value == {1: 1.0, 2: 0.5}[lost]
    assert hit.status == "underpowered" and hit.ci is not None and hit.ci[0] < 0 < hit.ci[1]
    assert comparison.verdict == "pass" and not comparison.regressed


def test_a_significant_drop_is_regressed_but_fails_only_with_the_gate_on():
    before = hits_results([1] * 200 + [0] * 100)
    after = hits_results([0] * 30 + [1] * 170 + [0] * 100)  # 30 lost hits, none gained
    report_only = run(after, before)
    hit = row(report_only, "hit@5")
    assert hit.delta == pytest.approx(-0.1)
    assert hit.p_value == pytest.approx(2 * 0.5 ** 30)
    assert hit.ci is not None and hit.ci[1] < 0
    assert hit.status == "regressed" and hit.gated
    assert report_only.regressed and report_only.verdict == "pass" and report_only.failures == []
    gated = run(after, before, GateSettings(fail_on_regression=True))
    assert gated.verdict == "fail"
    assert gated.failures == ["hit@5 on overall: dropped by 0.100 (30 lost, 0 gained of 300 paired; one-sided "
                              "p < 0.001), more than the max drop 0.02"]
    assert row(gated, "hit@5").p_one_sided == pytest.approx(0.5 ** 30)


def test_a_significant_gain_is_improved():
    comparison = run(hits_results([1] * 250 + [0] * 50), hits_results([1] * 200 + [0] * 100))
    assert row(comparison, "hit@5").status == "improved"
    assert comparison.verdict == "pass"


def test_new_and_missing_metrics_and_slices():
    before = make_results([make_case(f"q{i}", {"hit@5": 1.0, "map@5": 0.5}, slices=["overall", "locale=es-419"])
                           for i in range(10)], metrics=["hit@5", "map@5"])
    after = make_results([make_case(f"q{i}", {"hit@5": 1.0, "mrr@5": 0.5}, slices=["overall", "locale=pt-BR"])
                          for i in range(10)], metrics=["hit@5", "mrr@5"])
    comparison = run(after, before)
    statuses = {(r.metric, r.slice): r.status for r in comparison.rows}
    assert statuses[("map@5", "overall")] == "missing"
    assert statuses[("mrr@5", "overall")] == "new"
    assert statuses[("hit@5", "overall")] == "unchanged"  # no case changed
    assert statuses[("hit@5", "locale=pt-BR")] == "new"
    assert statuses[("hit@5", "locale=es-419")] == "missing"
    assert row(comparison, "mrr@5").baseline is None and row(comparison, "map@5").current is None
    assert comparison.rows[0].slice == "overall"


def test_a_slice_whose_cases_are_all_new_is_inconclusive():
    before = make_results([make_case(f"q{i}", dict.fromkeys(HEADLINE, 1.0), slices=["overall", "kind=golden"])
                           for i in range(10)])
    after = make_results([make_case(f"n{i}", dict.fromkeys(HEADLINE, 0.0), slices=["overall", "kind=golden"])
                          for i in range(10)])
    comparison = run(after, before)
    hit = row(comparison, "hit@5", "kind=golden")
    assert (hit.n, hit.delta, hit.status) == (0, None, "inconclusive")
    assert comparison.cases_added == [f"n{i}" for i in range(10)]
    assert comparison.cases_removed == [f"q{i}" for i in range(10)]


def test_config_changes_are_listed_and_numbers_still_compared():
    before = hits_results([1, 0] * 20)
    after = make_results(hits_results([1, 1] * 20).cases, config={"retriever": "dense", "model": "m2"},
                         kb_sha="kb-2")
    comparison = run(after, before)
    assert not comparison.like_for_like
    changes = {c.key: (c.baseline, c.current) for c in comparison.config_changes}
    assert changes == {"config.model": ("m1", "m2"), "inputs.kb": ("kb-1", "kb-2")}
    assert row(comparison, "hit@5").delta == pytest.approx(0.5)


def test_a_different_run_file_alone_is_like_for_like():
    before = hits_results([1, 0] * 20)
    after = hits_results([1, 1] * 20)  # same config and inputs; the run hash differs (count in the name)
    after.inputs["run"].sha256 = "some-other-run"
    assert run(after, before).like_for_like


def test_another_suite_is_shown_as_a_config_change():
    before = make_results(hits_results([1] * 5).cases, suite="search")
    comparison = run(hits_results([1] * 5), before)
    assert comparison.config_changes[0].key == "suite"
    assert not comparison.like_for_like


def test_lost_and_gained_hits_are_listed_most_impactful_first():
    def case(cid: str, hit: float, ndcg: float):
        return make_case(cid, {"hit@5": hit, "recall@5": hit, "ndcg@5": ndcg}, query=f"query {cid}")

    before = make_results([case("a", 1, 0.5), case("b", 1, 1.0), case("c", 1, 0.38685), case("d", 0, 0.0),
                           case("e", 0, 0.0), case("f", 1, 1.0)])
    after = make_results([case("a", 0, 0.0), case("b", 0, 0.0), case("c", 0, 0.0), case("d", 1, 0.43068),
                          case("e", 1, 1.0), case("f", 1, 0.5)])
    comparison = run(after, before)
    assert [c.id for c in comparison.lost_hits] == ["b", "a", "c"]
    assert [c.id for c in comparison.gained_hits] == ["e", "d"]
    top = comparison.lost_hits[0]
    assert (top.metric, top.baseline, top.current, top.delta, top.query) == ("ndcg@5", 1.0, 0.0, -1.0, "query b")


def test_failed_cases_in_the_current_run_count_as_misses():
    before = hits_results([1] * 40)
    failed = [make_case(f"q{i:04d}", dict.fromkeys(HEADLINE, 0.0), status="failed") for i in range(20)]
    after = make_results(failed + list(hits_results([1] * 40).cases[20:]))
    hit = row(run(after, before), "hit@5")
    assert (hit.n, hit.delta, hit.status) == (40, -0.5, "regressed")


def test_a_kb_edit_is_like_for_like_and_kb_derived_counts_are_no_setting():
    bm25 = {"retriever": "bm25", "details": {"name": "bm25", "k1": 1.2, "units": 48}}
    before = make_results([make_case(f"q{i}", dict.fromkeys(HEADLINE, 1.0)) for i in range(10)], config=bm25)
    shorter = {"retriever": "bm25", "details": {"name": "bm25", "k1": 1.2, "units": 44}}  # 4 pages shortened
    after = make_results([make_case(f"q{i}", dict.fromkeys(HEADLINE, 1.0)) for i in range(10)], config=shorter,
                         kb_sha="kb-2")
    baseline = as_baseline(before)
    assert "units" not in baseline.fingerprint["config"]["details"]  # never in a new fingerprint
    comparison = run(after, baseline)
    # the KB's hash is listed (the configuration table reads it as cards), but it is the PR's
    # subject, not a setting: like-for-like; the chunk count is not a setting at all
    assert [c.key for c in comparison.config_changes] == ["inputs.kb"]
    assert comparison.like_for_like
    # a baseline written before the rule, with the count in its fingerprint, compares the same
    old = baseline.model_copy(update={"fingerprint": {**baseline.fingerprint, "config": bm25}})
    assert [c.key for c in run(after, old).config_changes] == ["inputs.kb"]
    # a setting still makes it not like-for-like; so does a changed case set
    tuned = make_results(after.cases, config={"retriever": "bm25", "details": {"name": "bm25", "k1": 0.9}})
    assert not run(tuned, baseline).like_for_like
    recased = make_results(before.cases, config=bm25, cases_sha="cases-2")
    changed = run(recased, baseline)
    assert not changed.like_for_like and [c.key for c in changed.config_changes] == ["inputs.cases"]


def test_a_hybrid_lane_s_unit_count_is_no_setting_either():
    lanes = [{"name": "bm25", "units": 48}, {"name": "dense", "model": "m"}]
    config = {"retriever": "hybrid", "details": {"name": "hybrid", "lanes": lanes}}
    before = make_results([make_case("q", dict.fromkeys(HEADLINE, 1.0))], config=config)
    fewer = {"retriever": "hybrid", "details": {"name": "hybrid", "lanes": [{"name": "bm25", "units": 40}, lanes[1]]}}
    after = make_results([make_case("q", dict.fromkeys(HEADLINE, 1.0))], config=fewer)
    comparison = run(after, before)
    assert comparison.config_changes == [] and comparison.like_for_like


def test_the_comment_warns_not_like_for_like_for_settings_only():
    from retrieval_gate.render.markdown import render_comment

    before = make_results([make_case(f"q{i}", dict.fromkeys(HEADLINE, 1.0)) for i in range(10)])
    kb_edit = make_results(before.cases, kb_sha="kb-2")
    assert "Not like-for-like" not in render_comment(results=kb_edit, comparison=run(kb_edit, before))
    model = make_results(before.cases, config={"retriever": "dense", "model": "m2"}, kb_sha="kb-2")
    text = render_comment(results=model, comparison=run(model, before))
    assert "**Not like-for-like:** the configuration changed since the baseline (config.model)." in text


def test_the_html_report_warns_not_like_for_like_for_settings_only():
    from retrieval_gate.render.html import render_html

    before = make_results([make_case(f"q{i}", dict.fromkeys(HEADLINE, 1.0)) for i in range(10)])
    kb_edit = make_results(before.cases, kb_sha="kb-2")
    assert "Not like-for-like" not in render_html(results=kb_edit, comparison=run(kb_edit, before))
    model = make_results(before.cases, config={"retriever": "dense", "model": "m2"}, kb_sha="kb-2")
    assert "Not like-for-like" in render_html(results=model, comparison=run(model, before))
