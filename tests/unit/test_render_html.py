"""The HTML report: one self-contained document that parses, carries its charts and tables, loads
nothing from anywhere, and shows hostile data as text."""

from __future__ import annotations

import re

import pytest

from retrieval_gate.render.html import render_html
from tests.golden import scenarios as sc
from tests.golden.readers import Doc, parse_html


@pytest.fixture(scope="module")
def reports() -> dict[str, tuple[sc.Scenario, str, Doc]]:
    out = {}
    for name in ("first_run", "improvement", "regression", "config_change", "hostile"):
        scenario = sc.SCENARIOS[name]()
        html = render_html(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline)
        out[name] = (scenario, html, parse_html(html))
    return out


NAMES = ["first_run", "improvement", "regression", "config_change", "hostile"]


@pytest.mark.parametrize("name", NAMES)
def test_report_is_one_document_with_inline_css_and_js_only(name: str, reports) -> None:
    _, html, doc = reports[name]
    assert html.startswith("<!doctype html>")
    names = doc.tag_names()
    assert names.count("html") == names.count("body") == names.count("style") == 1
    assert names.count("script") == 1  # ours: the sort/filter lines
    assert "link" not in names and "iframe" not in names and "img" not in names
    csp = [attrs for tag, attrs in doc.tags if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in (csp[0]["content"] or "")


@pytest.mark.parametrize("name", NAMES)
def test_no_remote_reference_anywhere(name: str, reports) -> None:
    _, html, doc = reports[name]
    for tag, attrs in doc.tags:
        assert "src" not in attrs and "href" not in attrs, tag
        for key, value in attrs.items():
            if key == "title":  # a tooltip's text (a case's whole question) is shown, never fetched
                continue
            assert value is None or ("://" not in value and not value.startswith("//")), (tag, value)
    assert "xmlns" not in html and "url(" not in html and "@import" not in html
    if name != "hostile":  # the hostile query carries a URL as text (checked below)
        assert not re.search(r"https?://", html)


@pytest.mark.parametrize(("name", "trend"), [("first_run", False), ("improvement", True), ("hostile", True)])
def test_charts_are_inline_svg(name: str, trend: bool, reports) -> None:
    scenario, html, doc = reports[name]
    names = doc.tag_names()
    shifts = bool(scenario.comparison and scenario.comparison.changed_cases)
    # hit and nDCG by slice (+ the trend) (+ the histogram of gold-rank shifts of "What changed")
    assert names.count("svg") == 2 + int(trend) + int(shifts)
    n_slices = len([s for s in scenario.results.aggregates if s not in ("overall", "no-answer")])
    bars = [a for t, a in doc.tags if t == "rect" and not (a.get("class") or "").startswith("shift")]
    compared = scenario.comparison is not None
    assert len(bars) == 2 * (n_slices + 1) * (2 if compared else 1)  # value (+ Δ) bar per row and chart
    assert html.count('class="whisker"') >= n_slices + 1  # Wilson interval on every hit@k bar
    assert ('class="baseline-tick"' in html) == compared
    assert (names.count("circle") == len(scenario.baseline.history) + 1) if trend else "circle" not in names


@pytest.mark.parametrize("name", NAMES)
def test_per_case_table_has_one_line_and_one_hidden_detail_row_per_case(name: str, reports) -> None:
    scenario, html, doc = reports[name]
    table = next(t for t in doc.tables if t[0][1:4] == ["case", "query", "status"])
    assert len(table) - 1 == 2 * len(scenario.results.cases)  # the line, then its detail row
    # the id, then its question (shown under the id where the query column is too narrow)
    assert [row[1] for row in table[1::2]] == [c.id.strip() + (c.query.strip()[:89] + "…" if len(c.query.strip()) > 90
                                                               else c.query.strip())
                                               for c in scenario.results.cases]
    assert html.count('<tr class="detail"') == html.count('" hidden><td></td>') == len(scenario.results.cases)
    assert 'class="sortable" id="cases"' in reports[name][1]


def test_headline_numbers_and_fingerprint_are_shown(reports) -> None:
    scenario, html, doc = reports["improvement"]
    hit = scenario.results.aggregates["overall"]["hit@5"].value
    assert f'<div class="value">{hit:.3f}</div>' in html
    assert "recall@5 is a lower bound" in doc.text
    for key in ("retriever", "model", "k"):
        assert f"<dt>{key}</dt>" in html
    assert "input cases" in doc.text and "0000000000000000" in doc.text


def test_hostile_data_is_text_not_markup(reports) -> None:
    _, html, doc = reports["hostile"]
    assert "<script>alert(1)</script>" in doc.text  # shown as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert not any("onerror" in attrs for _, attrs in doc.tags)
    assert "<b>x</b>" not in html and "@team|<b>x</b>" in doc.text
    assert "https://evil.example/x" in doc.text  # a URL in a query stays text, never a link
    assert "docs --&gt; &lt;b&gt;" in html


def test_failed_case_row_is_marked(reports) -> None:
    _, html, _ = reports["hostile"]
    assert html.count('<tr class="failed">') == 1
    assert "failed: missing from the run" in html


def test_the_drill_down_shows_both_rankings_with_gold_and_kb_marks_filters_and_the_shift_histogram():
    from retrieval_gate.compare.kb_changes import CardRef, KbChanges

    scenario = sc.regression()
    changes = scenario.comparison.changed_cases
    first = changes[0]
    top_now = next(c.retrieved for c in scenario.results.cases if c.id == first.id)[0]
    comparison = scenario.comparison.model_copy(update={"kb_changes": KbChanges(edited=[CardRef(card=top_now)])})
    html = render_html(results=scenario.results, comparison=comparison, baseline=scenario.baseline)
    assert html.count('class="wc-case"') == len(changes)
    block = html[html.index(f'data-case="{first.id}" data-cause='):]
    block = block[:block.index("</table>")]
    before, after = block.split("</td>")[0], block.split("</td>")[1]
    gold = first.gold[0]
    assert (f'<li class="hit" title="{gold.card}">{gold.card}</li>' in before) == (gold.rank_before is not None)
    assert (f'<li class="hit" title="{gold.card}">{gold.card}</li>' in after) == (gold.rank_after is not None)
    assert f'<li class="kb-edited" title="{top_now}">{top_now} <small>(edited)</small></li>' in after  # the KB mark
    assert '<option value="ranking" title=' in html and f'<option value="{first.slices[1]}">' in html
    # the histogram: one bar per shift, counted here from the gold ranks by hand
    gone = sum(1 for c in changes for g in c.gold if g.rank_before is not None and g.rank_after is None)
    assert re.search(rf"<title>left the top: {gone}</title>", html)
    assert "ranks before are unknown" not in html
    old = comparison.model_copy(update={"baseline_rankings": False})
    assert render_html(results=scenario.results, comparison=old, baseline=scenario.baseline).count(
        "ranks before are unknown") == 1  # said once


def test_the_shift_histogram_has_a_count_axis_a_count_over_each_bar_and_its_caption_outside_the_chart():
    from collections import Counter

    scenario = sc.regression()
    html = render_html(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline)
    svg = html[html.index('<svg class="chart shifts"'):]
    svg = svg[:svg.index("</svg>")]
    # counted by hand from the gold ranks: one per gold card that moved
    by_hand: Counter[str] = Counter()
    for change in scenario.comparison.changed_cases:
        for g in change.gold:
            if g.rank_before == g.rank_after:
                continue
            key = ("left the top" if g.rank_after is None else "entered the top" if g.rank_before is None
                   else f"{g.rank_after - g.rank_before:+d}")
            by_hand[key] += 1
    bars = re.findall(r"<title>([^<]+): (\d+)</title></rect>", svg)
    assert {label: int(n) for label, n in bars} == dict(by_hand)
    counts = re.findall(r'class="value(?: inside)?" text-anchor="middle">(\d+)</text>', svg)
    assert [int(n) for n in counts] == [int(n) for _, n in bars]
    ticks = [int(t) for t in re.findall(r'class="tick" text-anchor="end">(\d+)</text>', svg)]
    assert ticks[0] == 0 and ticks[-1] == max(by_hand.values())
    assert "rank after − before" not in svg and "<figcaption>Gold cards per rank shift" in html


@pytest.mark.parametrize("name", NAMES)
def test_an_overall_row_under_30_cases_is_marked_indicative_as_a_slice_is(name: str, reports) -> None:
    """The rule that marks a slice (fewer than 30 cases) marks the headline cards and the overall
    table's rows too: each one whose n is under 30, and none above."""
    scenario, html, _ = reports[name]
    overall = scenario.results.aggregates["overall"]
    small = overall["hit@5"].n < 30
    cards = re.findall(r'<div class="metric">([^<]*)(?:<span class="note">\(indicative\)</span>)?</div>', html)
    marked = html.count('<span class="note">(indicative)</span>')
    assert cards and (marked == len(cards) if small else marked == 0)
