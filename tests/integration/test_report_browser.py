"""The HTML report's charts and case list in a real headless Chromium (tests/browser.py), on the
golden scenarios — the 3,000-case one with 40 tag values among them — and a 41-point trend that
touches 1.000: with every folded section opened, no chart text leaves its chart or sits on other
text, no id breaks, no case row grows past two lines; sorting and expanding work from the keyboard."""

from __future__ import annotations

import pytest

from retrieval_gate.render.html import render_html
from tests.browser import browser, measure
from tests.golden import scenarios as sc

OPEN_ALL = "document.querySelectorAll('details').forEach(d => { d.open = true; })"


def _long_trend() -> sc.Scenario:
    scenario = sc.regression()
    history = tuple(1.0 if i % 7 == 0 else 0.9 + 0.002 * i for i in range(40))
    return sc.Scenario("trend", scenario.results, scenario.comparison,
                       sc.make_baseline(scenario.results, history=history))


@pytest.fixture(scope="module")
def page():
    with browser() as opened:
        yield opened


@pytest.mark.parametrize("name", ["improvement", "regression", "config_change", "hostile", "huge", "trend"])
def test_chart_text_stays_inside_its_chart_and_apart_ids_never_break_rows_stay_compact(name, page, tmp_path):
    scenario = _long_trend() if name == "trend" else sc.SCENARIOS[name]()
    html = tmp_path / "report.html"
    html.write_text(render_html(results=scenario.results, comparison=scenario.comparison,
                                baseline=scenario.baseline), encoding="utf-8")
    page.open(html)
    page.js(OPEN_ALL)
    m = measure(page)
    charts = page.js("document.querySelectorAll('svg.chart').length")
    assert charts >= 2 + (scenario.baseline is not None)
    assert m["chart_text_outside"] == [] and m["chart_text_overlapping"] == [], m
    assert m["broken_ids"] == [], m["broken_ids"][:10]
    assert m["rows"] == len(scenario.results.cases) and m["max_row_height"] <= 120


def _ids(page) -> list[str]:
    return page.js("Array.from(document.querySelectorAll('#cases tbody.case')).map(b => b.dataset.status + ' ' + "
                   "b.querySelector('.case-id').textContent)")


def test_the_case_list_sorts_and_expands_from_the_keyboard(page, tmp_path):
    scenario = sc.regression()
    html = tmp_path / "report.html"
    html.write_text(render_html(results=scenario.results, comparison=scenario.comparison,
                                baseline=scenario.baseline), encoding="utf-8")
    page.open(html)
    before = _ids(page)
    page.js("Array.from(document.querySelectorAll('#cases th button')).find(b => b.textContent === 'case').focus()")
    page.key("Enter", "Enter", 13, "\r")
    ascending = _ids(page)
    keys = [line.split(" ", 1)[1] for line in ascending]
    assert keys == sorted(keys, key=str.lower) and sorted(ascending) == sorted(before)
    page.key("Enter", "Enter", 13, "\r")
    assert [line.split(" ", 1)[1] for line in _ids(page)] == keys[::-1]
    page.js("document.querySelector('#cases tbody.case .toggle').focus()")
    page.key(" ", "Space", 32, " ")
    assert page.js("document.querySelector('#cases tbody.case tr.detail').hidden") is False
    assert page.js("document.querySelector('#cases tbody.case .toggle').getAttribute('aria-expanded')") == "true"


def test_printing_unfolds_every_section_drops_the_controls_and_lets_the_case_list_run_on(page, tmp_path):
    scenario = sc.regression()
    html = tmp_path / "report.html"
    html.write_text(render_html(results=scenario.results, comparison=scenario.comparison,
                                baseline=scenario.baseline), encoding="utf-8")
    page.open(html)
    folded = page.js("document.querySelectorAll('details:not([open])').length")
    assert folded >= 3
    page.call("Page.printToPDF")  # fires beforeprint
    assert page.js("document.querySelectorAll('details:not([open])').length") == 0
    page.call("Emulation.setEmulatedMedia", media="print")
    assert page.js("getComputedStyle(document.querySelector('.controls')).display") == "none"
    assert page.js("getComputedStyle(document.querySelector('.table-wrap')).maxHeight") == "none"
    page.call("Emulation.setEmulatedMedia", media="")


@pytest.mark.parametrize(("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_a_missing_browser_fails_under_ci_and_skips_elsewhere(ci, outcome, monkeypatch, tmp_path):
    from tests.browser import chromium_path

    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no chromium on it
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no chromium on PATH"):
        chromium_path()


def test_the_label_buttons_record_the_chosen_grade_and_the_last_choice_per_card(page, tmp_path):
    import json

    from retrieval_gate.compare.label_queue import QueueItem

    scenario = sc.regression()
    change = scenario.comparison.changed_cases[0]
    graded = scenario.results.model_copy(update={"cases": [
        c.model_copy(update={"grades": {g: 3 for g in c.gold}}) if c.id == change.id else c
        for c in scenario.results.cases]})
    queue = [QueueItem(case=change.id, query="q", card=card, rank=i, title="", snippet="s", sha=f"sha{i}")
             for i, card in enumerate(("x-card", "y-card"), 1)]
    html = tmp_path / "report.html"
    html.write_text(render_html(results=graded, comparison=scenario.comparison, baseline=scenario.baseline,
                                queue=queue), encoding="utf-8")
    page.open(html)
    x, y = '.label-item[data-card="x-card"]', '.label-item[data-card="y-card"]'
    page.js(f"document.querySelector('{x} select').value = '2'")
    page.click(f'{x} button[data-grade="1"]')
    page.click(f'{y} button[data-grade="1"]')
    page.click(f'{y} button[data-grade="0"]')  # changed its mind: the last choice counts
    decisions = [json.loads(line) for line in page.js("window.retrievalGateLabels()").splitlines()]
    assert [(d["case"], d["card"], d["grade"], d["sha"]) for d in decisions] == [
        (change.id, "x-card", 2, "sha1"), (change.id, "y-card", 0, "sha2")]
    assert all(d["at"].endswith("Z") for d in decisions)
    assert page.js("document.getElementById('download-labels').textContent") == "Download labels (2)"


QUESTIONS_JS = r"""(() => {
  const shown = el => el && el.offsetParent !== null && el.getBoundingClientRect().width > 0;
  const rows = Array.from(document.querySelectorAll("#cases tbody.case > tr:first-child")).slice(0, 40);
  return {
    lost: Array.from(document.querySelectorAll("#lost-hits li")).map(li => {
      const q = li.querySelector("q.case-question");
      return {id: li.querySelector(".ids").textContent, q: q ? q.textContent : null, title: q ? q.title : null,
              shown: shown(q)};
    }),
    rows: rows.map(tr => {
      const q = tr.querySelector(".case-q"), col = tr.querySelector("td.query");
      return {id: tr.querySelector(".case-id").textContent, title: q ? q.title : null,
              under_id: shown(q) && q.getBoundingClientRect().width >= 60,
              column: col.getBoundingClientRect().width};
    }),
    scroll: document.documentElement.scrollWidth,
  };
})()"""


@pytest.mark.parametrize("width", [390, 1400])
def test_every_case_id_comes_with_its_question_at_every_width(page, tmp_path, width):
    scenario = sc.regression()
    html = tmp_path / "report.html"
    html.write_text(render_html(results=scenario.results, comparison=scenario.comparison,
                                baseline=scenario.baseline), encoding="utf-8")
    page.open(html, width=width, height=900)
    m = page.js(QUESTIONS_JS)
    queries = {c.id: c.query for c in scenario.results.cases}
    assert m["lost"], "the regression scenario loses hits"
    for item in m["lost"]:
        assert item["shown"] and item["title"] == queries[item["id"]], item
        assert queries[item["id"]].startswith(item["q"].rstrip("…"))
    for row in m["rows"]:
        readable = row["under_id"] if width == 390 else row["column"] >= 120
        assert readable and row["title"] == queries[row["id"]], (width, row)
    assert m["scroll"] <= width
