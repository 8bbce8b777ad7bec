"""The history site in a real headless Chromium (tests/browser.py), opened from file:// as built by
``retrieval-gate history`` from a real repository: no request leaves the page, no script error, at
1,400 px and at a phone's 390 px (no sideways scroll there), light and dark; chart text inside its
chart and apart; the case grid sorts from the keyboard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import retrieval_gate
from tests.browser import browser, measure
from tests.history_repo import Refresh, commit_refresh, init_repo

SRC = str(Path(retrieval_gate.__file__).resolve().parents[1])
HOSTILE = "x</script><img src=https://example.invalid/i.png>&amp;"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history")
    repo = init_repo(root / "repo")
    kb = {f"k{i}": "v" for i in range(30)}
    for r in range(24):
        hits = {f"case-{i:03d}": int((i + r // 6) % 4 != 0) for i in range(30)}
        hits["case-flaky"] = r % 2
        hits[HOSTILE] = r % 3 == 0  # an id that would end the data's <script> and load an image
        cases = {c: (h, 0.6 * h + 0.1, [f"k{j % 30}" for j in range(int(c[-1]) if c[-1].isdigit() else 0, 3)])
                 for c, h in hits.items()}
        slices = {c: [f"locale={'pt-BR' if i % 2 else 'en-US'}"] for i, c in enumerate(cases)}
        edited = {**kb, "k1": f"v{r // 5}"}
        commit_refresh(repo, Refresh(cases=cases, kb=edited, slices=slices, model="m1" if r < 12 else "m2",
                                     date=f"2026-04-{r // 3 + 1:02d}T{9 + r % 3:02d}:00:00+00:00",
                                     message=f"Merge pull request #{100 + r} from team/x"))
    # the golden set in the checkout: the page shows each case's question with its id
    (repo / "eval").mkdir()
    (repo / "eval" / "cases.jsonl").write_text("".join(
        json.dumps({"id": c, "query": f"how do I reach topic {c}? " + "and more words " * 12, "gold": ["k1"]}) + "\n"
        for c in [f"case-{i:03d}" for i in range(30)] + ["case-flaky"]), encoding="utf-8")
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb\n    cases: eval/cases.jsonl\n",
                                             encoding="utf-8")
    out = root / "site"
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", "history", "--out", str(out)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def page():
    with browser() as opened:
        opened.call("Network.enable")
        yield opened


@pytest.mark.parametrize(("name", "width", "dark"), [("default.html", 1400, False), ("default.html", 390, True),
                                                     ("index.html", 1400, True), ("index.html", 390, False)])
def test_nothing_leaves_the_page_no_script_fails_and_it_fits(site: Path, page, name: str, width: int,
                                                             dark: bool) -> None:
    path = site / name
    page.events.clear()
    page.open(path, width=width, height=900, dark=dark)
    assert page.requests() == [path.resolve().as_uri()]
    assert page.script_errors() == []
    assert page.js("document.documentElement.scrollWidth") <= width
    m = measure(page)
    assert m["chart_text_outside"] == [] and m["chart_text_overlapping"] == [], m
    background = page.js("getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(13, 17, 23)") == dark


def test_the_case_grid_shows_the_flaky_case_first_and_sorts_from_the_keyboard(site: Path, page) -> None:
    page.open(site / "default.html", width=1400, height=900)

    def ids() -> list[str]:
        return page.js("Array.from(document.querySelectorAll('#grid tbody tr td.id'))"
                       ".map(td => td.firstChild.textContent)")

    first = ids()
    assert first[0] == "case-flaky"
    assert HOSTILE in first  # shown as the text it is
    assert page.js("document.querySelector('#grid tbody tr .tag').textContent") == "flaky"
    assert page.js("document.querySelectorAll('#grid canvas').length") == len(first)
    page.js("document.querySelector('#grid th[data-key=id] button').focus()")
    page.key("Enter", "Enter", 13, "\r")
    ascending = ids()
    assert ascending == sorted(first)
    assert page.js("document.querySelector('#grid th[data-key=id]').getAttribute('aria-sort')") == "ascending"
    page.key("Enter", "Enter", 13, "\r")
    assert ids() == sorted(first, reverse=True)


def test_the_page_names_each_refresh_its_pr_and_the_settings_change(site: Path, page) -> None:
    page.open(site / "default.html", width=1400, height=900)
    text = page.js("document.body.innerText")
    assert "#123" in text and "#100" in text
    assert "config.model: m1 → m2" in page.js("document.querySelector('table.steps').innerText")
    assert page.js("document.querySelectorAll('.multiples svg').length") == 2  # locale=en-US, locale=pt-BR


TABLE_JS = r"""(() => {
  const table = document.querySelector("table.steps"), wrap = table.parentElement;
  const rows = Array.from(table.querySelectorAll("tbody tr"));
  const heads = Array.from(document.querySelectorAll("#grid thead th"));
  const clash = [];
  heads.forEach((th, i) => {
    const b = th.querySelector("button") || th, r = b.getBoundingClientRect(), box = th.getBoundingClientRect();
    if (b.scrollWidth > b.clientWidth + 1 || r.right > box.right + 0.5) clash.push(th.textContent);
  });
  return {table: table.getBoundingClientRect().width, wrap: wrap.clientWidth, scroll: wrap.scrollWidth,
          cells_overflowing: Array.from(table.querySelectorAll("td, th")).filter(c => c.offsetParent !== null
            && c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.slice(0, 40)),
          row_display: rows.length ? getComputedStyle(rows[0]).display : null,
          row_widths: rows.map(r => r.getBoundingClientRect().width),
          labels: rows.length ? Array.from(rows[0].querySelectorAll("td"))
            .map(td => getComputedStyle(td, "::before").content) : [],
          step_titles: Array.from(table.querySelectorAll(".step[title]")).length,
          header_clash: clash};
})()"""


@pytest.mark.parametrize("dark", [False, True])
def test_the_refreshes_table_fits_its_column_at_1400_px_its_figures_on_hover(site: Path, page, dark: bool) -> None:
    page.open(site / "default.html", width=1400, height=900, dark=dark)
    m = page.js(TABLE_JS)
    assert m["table"] <= m["wrap"] + 1 and m["scroll"] <= m["wrap"] + 1, m
    assert m["cells_overflowing"] == [], m
    assert m["header_clash"] == [], m
    assert m["step_titles"] >= 23 * 3  # every step's interval and p on hover
    title = page.js("document.querySelector('table.steps .step[title]').getAttribute('title')")
    assert title.startswith("Δ ") and " [" in title and " p " in title


def test_each_refresh_is_one_readable_card_at_390_px(site: Path, page) -> None:
    page.open(site / "default.html", width=390, height=900)
    m = page.js(TABLE_JS)
    assert m["row_display"] == "block"
    assert all(w <= 390 for w in m["row_widths"]) and m["scroll"] <= m["wrap"] + 1, m
    assert m["cells_overflowing"] == [], m
    assert m["labels"][:3] == ['"date"', '"commit"', '"PR"'] and m["labels"][-1] == '"what changed"'
    assert m["header_clash"] == [], m  # the case grid's headers: no "statu:flips"
    heights = page.js("Array.from(document.querySelectorAll('table.steps tbody tr')).map(r => r.offsetHeight)")
    assert max(heights) < 400, heights  # a card, not a tall empty row


CHART_JS = r"""(() => {
  const svg = document.querySelector(".wide svg.chart") || document.querySelector("svg.chart");
  const xs = cls => Array.from(svg.querySelectorAll("line." + cls)).map(l => +l.getAttribute("x1"))
    .sort((a, b) => a - b);
  const dates = Array.from(svg.querySelectorAll("text.tick")).map(t => t.textContent).filter(t => /^\d{4}-/.test(t));
  return {dates: dates, kb: xs("kb-tick"), marker: xs("marker")};
})()"""


def test_the_chart_is_spaced_by_refresh_with_ticks_that_differ_and_marks_apart(site: Path, page) -> None:
    from retrieval_gate.render.history_charts import MARK_GAP_PX

    page.open(site / "default.html", width=1400, height=900)
    m = page.js(CHART_JS)
    assert len(m["dates"]) >= 3 and len(set(m["dates"])) == len(m["dates"]), m  # three refreshes a day
    for kind in ("kb", "marker"):
        gaps = [b - a for a, b in zip(m[kind], m[kind][1:], strict=False)]
        assert all(g >= MARK_GAP_PX for g in gaps), (kind, m[kind])
    assert m["marker"], m  # the model change (S) is drawn
    text = page.js("document.querySelector('table.steps').innerText")
    assert "KB 1 card edited (k1)" in text


@pytest.mark.parametrize("width", [1400, 390])
def test_each_case_strip_shows_its_question_shortened_whole_on_hover(site: Path, page, width: int) -> None:
    page.open(site / "default.html", width=width, height=900)
    rows = page.js("""Array.from(document.querySelectorAll('#grid tbody tr')).map(tr => {
      const q = tr.querySelector('td.id .q'), td = tr.querySelector('td.id');
      return {id: td.firstChild.textContent, q: q ? q.title : null, w: q ? q.getBoundingClientRect().width : 0,
              fits: q ? q.getBoundingClientRect().right <= td.getBoundingClientRect().right + 0.5 : null};
    })""")
    flaky = next(r for r in rows if r["id"] == "case-flaky")
    assert flaky["q"].startswith("how do I reach topic case-flaky?") and flaky["w"] > 40 and flaky["fits"], flaky
    assert next(r for r in rows if r["id"] == HOSTILE)["q"] is None  # not in the golden set: the id alone
    assert page.js("document.documentElement.scrollWidth") <= width
