"""SVG charts, number formatting and the view model behind the comment and the HTML report."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.compare.model import Comparison
from retrieval_gate.render import fmt
from retrieval_gate.render.cells import Cell, headline_metrics, worse_cells
from retrieval_gate.render.charts import ChartRow, nice_limit, nice_ticks, slice_chart, trend_chart, wilson
from retrieval_gate.render.context import build_context
from retrieval_gate.render.trend import Trend, TrendPoint
from retrieval_gate.render.verdict import gate_summary, verdict
from tests.golden import scenarios as sc
from tests.golden.readers import parse_html


def cell(**kw) -> Cell:
    base = {"metric": "hit@5", "display": "hit@5", "measure": "hit", "current": 0.5, "n": 40, "n_current": 40}
    base.update(kw)
    return Cell(**base)


# --- charts ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("k", "n"), [(50, 100), (0, 10), (10, 10), (3, 7), (29, 30), (1, 1000)])
def test_wilson_interval_matches_scipy(k: int, n: int) -> None:
    expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson(k / n, n)
    assert lo == pytest.approx(expected.low, abs=1e-9)
    assert hi == pytest.approx(expected.high, abs=1e-9)


def test_wilson_textbook_value_and_empty_n() -> None:
    assert wilson(0.5, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    assert wilson(0.3, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("value", "limit"), [(0.0, 0.02), (0.02, 0.02), (0.021, 0.05), (0.26, 0.3), (0.9, 1.0),
                                              (3.0, 1.0)])
def test_nice_limit(value: float, limit: float) -> None:
    assert nice_limit(value) == limit


@pytest.mark.parametrize(("lo", "hi", "expected"), [
    (0.03, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    (0.29, 0.63, [0.2, 0.3, 0.4, 0.5, 0.6, 0.7]),
    (0.5, 0.52, [0.5, 0.51, 0.52]),
])
def test_nice_ticks(lo: float, hi: float, expected: list[float]) -> None:
    start, stop, ticks = nice_ticks(lo, hi)
    assert ticks == expected and start == expected[0] and stop == expected[-1]


def test_slice_chart_draws_value_and_delta_bars_with_whiskers_and_escapes_labels() -> None:
    rows = [ChartRow(label="overall", cell=cell(baseline=0.4, delta=0.1, ci=(0.02, 0.18), compared=True,
                                                status="improved")),
            ChartRow(label="tag = <b>x</b>", cell=cell(current=0.2, n=10, n_current=10, baseline=0.3, delta=-0.1,
                                                       ci=(-0.3, 0.1), compared=True, status="ok"),
                     indicative=True)]
    svg = str(slice_chart(rows, title="hit@5 by slice", proportion=True, compared=True))
    doc = parse_html(svg)
    names = doc.tag_names()
    assert names.count("rect") == 4  # value + Δ per row
    assert svg.count('class="whisker"') == 4  # Wilson + CI per row
    assert svg.count('class="baseline-tick"') == 2
    assert "tag = &lt;b&gt;x&lt;/b&gt; *" in svg and "<b>" not in svg
    assert "xmlns" not in svg


def test_slice_chart_without_comparison_and_non_proportion_has_no_whiskers() -> None:
    svg = str(slice_chart([ChartRow(label="overall", cell=cell(metric="ndcg@5"))], title="nDCG@5",
                          proportion=False, compared=False))
    assert svg.count("<rect") == 1 and "whisker" not in svg and "Δ" not in svg


def test_trend_chart_has_a_point_per_value_and_marks_this_run() -> None:
    trend = Trend(metric="hit@5", display="hit@5",
                  points=[TrendPoint("a1", 0.5), TrendPoint("b2", 0.6), TrendPoint("this run", 0.55, current=True)])
    svg = str(trend_chart(trend))
    assert svg.count("<circle") == 3 and svg.count("trend-point current") == 1
    path = svg[svg.index('d="') + 3:svg.index('"', svg.index('d="') + 3)]
    assert path.count("M") == 1 and path.count("L") == 2


# --- number formatting -------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [(0.04, "+0.040"), (-0.04, "−0.040"), (0.0004, "±0.000"),
                                                 (-0.0004, "±0.000"), (None, "–"), (1.0, "+1.000")])
def test_signed(value: float | None, expected: str) -> None:
    assert fmt.signed(value) == expected


@pytest.mark.parametrize(("c", "expected"), [
    (cell(delta=-0.04, status="regressed", compared=True), "🔴 ▼ −0.040"),
    (cell(delta=0.04, status="improved", compared=True), "🟢 ▲ +0.040"),
    (cell(delta=0.01, status="inconclusive", compared=True), "🟡 ▲ +0.010"),
    (cell(delta=0.0, status="ok", compared=True), "⚪ = ±0.000"),
    (cell(delta=None, status="new", compared=True), "🆕 new"),
    (cell(), "–"),
])
def test_delta_reads_at_a_glance(c: Cell, expected: str) -> None:
    assert fmt.delta(c) == expected


def test_ci_n_change_and_sparkline() -> None:
    assert fmt.ci(cell(ci=(-0.07, -0.01))) == "[−0.070, −0.010]"
    assert fmt.ci(cell(ci=(-0.6667, 0.0))) == "[−0.667, 0.000]"
    assert fmt.ci(cell(p_value=0.0312)) == "p = 0.031"  # compare.gate.format_p: 3 decimals
    assert fmt.ci(cell(p_value=0.0004)) == "p < 0.001"
    assert fmt.ci(cell()) == "–"
    assert fmt.n_label(cell(n=195, n_current=200, n_baseline=198, compared=True)) == "195 (200 now, 198 before)"
    assert fmt.n_label(cell(n=1234, n_current=1234, n_baseline=1234, compared=True)) == "1,234"
    assert fmt.change(1.0, 0.0) == "1 → 0"
    assert fmt.change(0.631, 0.0) == "0.631 → 0.000"
    # height = round((v − min) / (max − min) × 7): 0 → ▁, 0.5 → round(3.5) = 4 → ▅, 1 → █
    assert fmt.sparkline([0.0, 0.5, 1.0]) == "▁▄█"
    assert fmt.sparkline([0.3, 0.3]) == "▄▄"
    # the series: three refreshes that print as 0.927 are flat, not "██▁"
    assert fmt.sparkline([0.927273, 0.927273, 0.927]) == "▄▄▄"
    # 0.90 → 0.91 → 0.92 spans the 0.02 floor exactly; 0.90 → 0.905, within it, moves one block
    assert fmt.sparkline([0.90, 0.91, 0.92]) == "▁▄█"
    # span 0.02 centred on 0.9025: 0.375 × 7 = 2.6 → 3 (▄), 0.625 × 7 = 4.4 → 4 (▅)
    assert fmt.sparkline([0.900, 0.905]) == "▄▅"
    assert fmt.safe_url("javascript:alert(1)") is None
    assert fmt.safe_url("https://x.example/a b") == "https://x.example/a%20b"


# --- view model --------------------------------------------------------------------------------

def comparison(**kw) -> Comparison:
    return Comparison(headline_k=5, metrics=["hit@5"], **kw)


@pytest.mark.parametrize(("comp", "baseline", "headline", "worse", "kind"), [
    (None, None, [], [], "first_run"),
    (None, "b", [], [], "not_compared"),
    (comparison(verdict="fail", failures=["x"]), None, [], [], "fail"),
    (comparison(), None, [cell(status="regressed", compared=True, gated=True)], [], "regressed"),
    (comparison(), None, [cell(status="below_floor", compared=True, gated=True)], [], "regressed"),
    (comparison(), None, [cell(status="improved", compared=True)], [("locale=en", cell(status="regressed"))],
     "mixed"),
    (comparison(regressed=True), None, [cell(status="ok", compared=True)], [], "mixed"),
    (comparison(), None, [cell(status="improved", compared=True, gated=True)], [], "improved"),
    (comparison(), None, [cell(status="inconclusive", compared=True)], [], "unchanged"),
])
def test_verdict_kinds(comp, baseline, headline, worse, kind) -> None:
    assert verdict(comparison=comp, baseline=baseline, headline=headline, worse=worse)["kind"] == kind


def _hits(prefix: str, n: int, delta: float) -> list:
    from retrieval_gate.compare.model import CaseChange

    return [CaseChange(id=f"{prefix}{i}", metric="hit@5", baseline=float(delta < 0), current=float(delta > 0),
                       delta=delta) for i in range(n)]


@pytest.mark.parametrize(("lost", "gained", "state", "mark", "text"), [
    (0, 0, "unchanged", "⚪", "no case changed"),
    (3, 0, "unsure", "🟡", "3 lost, 0 gained — too few to be sure at n = 41"),
    (3, 3, "balanced", "⚖️", "3 lost, 3 gained — no net effect"),
    (1, 3, "balanced", "⚖️", "1 lost, 3 gained — no net loss; too few to be sure of a gain at n = 41"),
])
def test_title_states_lead_with_the_counts(lost, gained, state, mark, text) -> None:
    from retrieval_gate.render.verdict import title

    comp = comparison(n_paired=41, lost_hits=_hits("l", lost, -1.0), gained_hits=_hits("g", gained, 1.0))
    found = title(comparison=comp, baseline=None, headline=[cell(status="ok", compared=True, gated=True, n=41)])
    assert (found.state, found.mark, found.text) == (state, mark, text)
    assert "noise" not in found.text


def test_the_titles_n_is_the_n_of_the_row_it_judges() -> None:
    """33 cases paired, 28 of them scored on the headline measure (5 without gold): the title says
    what the table's row says, n = 28."""
    from retrieval_gate.render.verdict import title

    comp = comparison(n_paired=33, lost_hits=_hits("l", 3, -1.0))
    found = title(comparison=comp, baseline=None, headline=[cell(status="ok", compared=True, gated=True, n=28)])
    assert found.text == "3 lost, 0 gained — too few to be sure at n = 28"


def test_a_failed_title_counts_the_rules_not_the_stale_labels_hint() -> None:
    """The stale-labels line heads the failures of a comparison whose lost hits sit on edited gold
    cards; it explains the failure, it is not one more rule (JUnit splits them the same way)."""
    from retrieval_gate.compare.changes import stale_line
    from retrieval_gate.render.verdict import title

    comp = comparison(verdict="fail", stale_gold_cards=["g1"],
                      failures=[stale_line(["g1"]), "completeness 0.9 is below the required 1.0"])
    found = title(comparison=comp, baseline=None, headline=[])
    assert found.state == "fail" and found.text.endswith("gate failed: 1 rule failed")


def test_gate_summary() -> None:
    assert gate_summary(GateSettings()) == "off (report only)"
    assert gate_summary(GateSettings(fail_on_regression=False, floors={}, max_drop={})) == "off (report only)"
    text = gate_summary(GateSettings(fail_on_regression=True, default_max_drop=0.02, require_significance=True,
                                     floors={"hit@5": 0.8}, max_drop={"ndcg@5": 0.05}))
    assert text == ("fail on regression (max drop 0.02, significant drops only); max drop ndcg@5 0.05; "
                    "floors hit@5 ≥ 0.8")


def test_headline_metrics_hit_first_and_fallback() -> None:
    results = sc.first_run().results
    assert headline_metrics(results) == ["hit@5", "recall@5", "ndcg@5"]
    only_mrr = results.model_copy(update={"metrics": ["mrr@5", "mrr@10"]})
    assert headline_metrics(only_mrr) == ["mrr@5"]


def test_worse_cells_headline_overall_first_then_largest_drop() -> None:
    cells = {"overall": {"hit@5": cell(status="regressed", delta=-0.01, flagged=True),
                         "mrr@5": cell(metric="mrr@5", status="regressed", delta=-0.5, flagged=True)},
             "locale=en": {"hit@5": cell(status="regressed", delta=-0.2, flagged=True)},
             # regressed at its own p, but not after Holm over the reported rows: not "worse"
             "locale=es": {"hit@5": cell(status="regressed", delta=-0.4, flagged=False)},
             "locale=pt": {"hit@5": cell(status="ok", delta=-0.3)}}
    order = [(name, c.metric) for name, c in worse_cells(cells, ["hit@5"])]
    assert order == [("overall", "hit@5"), ("locale=en", "hit@5"), ("overall", "mrr@5")]


def test_baseline_without_comparison_shows_unpaired_baseline_values_and_no_delta() -> None:
    scenario = sc.improvement()
    ctx = build_context(results=scenario.results, baseline=scenario.baseline)
    hit = ctx["headline"][0]
    assert hit.baseline == scenario.baseline.aggregates["overall"]["hit@5"].value
    assert hit.delta is None and not hit.compared
    assert ctx["verdict"]["kind"] == "not_compared"
    assert ctx["trend"] is not None and len(ctx["trend"].points) == len(scenario.baseline.history) + 1


def test_slices_in_natural_order_and_trend_needs_two_points() -> None:
    ctx = build_context(results=sc.huge().results)
    locales = [r.value for r in ctx["slices"] if r.field == "locale"]
    assert locales == [f"l{i}" for i in range(12)]
    assert ctx["trend"] is None  # no baseline: one point only
