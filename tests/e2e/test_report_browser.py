"""The HTML report as a reviewer sees it: opened in a real headless Chromium at 1,400 px, on the
example suite with the real bundled model and a real Chroma store. The geometry is measured in the
rendered page (tests/browser.py: MEASURE_JS); the labelling loop runs end to end — a click on
"relevant", the downloaded file, ``label apply``, and the next run counting the card."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from tests.browser import browser, chromium_path, measure, read_download
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.model

KB = EXAMPLES / "kb"
CASES = EXAMPLES / "cases.jsonl"
EMPTIED = ("plans-limits.md", "shortcuts-keyboard.md")
REWORDED = ("en-001", "How many days until a refunded ACH bank transfer or card payment shows up?")


def _cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    return int(info.value.code or 0)


def _eval(root: Path, name: str, *, kb: Path, cases: Path, store: Path) -> Path:
    out = root / f"{name}.json"
    assert _cli(["eval", "--kb", str(kb), "--cases", str(cases), "--store", str(store), "--exact",
                 "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict:
    chromium_path()  # a skip (a failure under CI) before minutes of embedding
    root = tmp_path_factory.mktemp("browser")
    store, baseline = root / "store", root / "baselines" / "default.json"
    results = _eval(root, "base", kb=KB, cases=CASES, store=store)
    assert _cli(["baseline", "update", "--results", str(results), "--baseline", str(baseline)]) == 0
    return {"root": root, "store": store, "baseline": baseline, "results": results}


def _report(suite: dict, name: str, results: Path, *extra: str, judgements: str | None = None) -> tuple[Path, dict]:
    comparison, html = suite["root"] / f"{name}.comparison.json", suite["root"] / f"{name}.html"
    read_as = ["--judgements", judgements] if judgements else []
    assert _cli(["compare", "--results", str(results), "--baseline", str(suite["baseline"]),
                 "--out", str(comparison), *read_as]) == 0
    assert _cli(["report", "--results", str(results), "--baseline", str(suite["baseline"]), "--comparison",
                 str(comparison), "--format", "html", "--out", str(html), *extra]) == 0
    return html, json.loads(comparison.read_text(encoding="utf-8"))


def _emptied_kb(root: Path) -> Path:
    kb = root / "kb"
    shutil.copytree(KB, kb)
    for name in EMPTIED:
        path = kb / "en-US" / name
        front = path.read_text(encoding="utf-8").split("---", 2)[1]
        path.write_text(f"---{front}---\nThis article is being rewritten.\n", encoding="utf-8")
    return kb


def _visible_cases(page) -> list[str]:
    return page.js("Array.from(document.querySelectorAll('#cases tbody.case')).filter(b => !b.hidden)"
                   ".map(b => b.querySelector('.case-id').textContent)")


def test_two_emptied_gold_pages_what_changed_first_compact_rows_no_broken_ids_charts_fit(suite) -> None:
    root = suite["root"]
    results = _eval(root, "emptied", kb=_emptied_kb(root), cases=CASES, store=suite["store"])
    html, comparison = _report(suite, "emptied", results)
    base = {c["id"]: c for c in json.loads(suite["results"].read_text(encoding="utf-8"))["cases"]}
    now = {c["id"]: c for c in json.loads(results.read_text(encoding="utf-8"))["cases"]}
    lost = sorted(c for c in now if base[c]["scores"].get("hit@5") == 1.0 and now[c]["scores"].get("hit@5") == 0.0)
    assert lost, "emptying the two pages lost no hit: the scenario tests nothing"
    with browser() as page:
        page.open(html, width=1400, height=900)
        m = measure(page)
        assert m["what_changed_top"] is not None and m["what_changed_top"] <= 1200, m
        assert m["page_height"] < 9000, m
        assert m["rows"] == len(now) and m["max_row_height"] <= 120, m
        assert m["broken_ids"] == [] and m["chart_text_outside"] == [] and m["chart_text_overlapping"] == [], m
        page.js("document.querySelectorAll('details').forEach(d => { d.open = true; })")  # the trend too
        unfolded = measure(page)
        assert unfolded["chart_text_outside"] == [] and unfolded["chart_text_overlapping"] == [], unfolded
        assert unfolded["broken_ids"] == [], unfolded["broken_ids"]
        page.open(html)
        # the header names every lost case, above "What changed"
        header = page.js("document.querySelector('header').innerText")
        assert all(case in header for case in lost)
        # filters: text typed into the search box, then the cause and status selects
        page.js("document.getElementById('filter').focus()")
        page.type_text(lost[0])
        assert _visible_cases(page) == [lost[0]]
        page.js("const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input'))")
        assert len(_visible_cases(page)) == len(now)
        page.js("const s = document.getElementById('f-cause'); s.value = 'gold-edited';"
                "s.dispatchEvent(new Event('change'))")
        edited = sorted(c["id"] for c in comparison["changed_cases"] if c["cause"] == "gold-edited")
        assert sorted(_visible_cases(page)) == edited
        # a row expands to its full ranking, and stays under the limit collapsed
        page.click("#cases tbody.case:not([hidden]) .toggle")
        assert page.js("document.querySelector('#cases tbody.case:not([hidden]) tr.detail').hidden") is False
        # dark mode: the page's background follows prefers-color-scheme
        page.open(html, dark=True)
        assert page.js("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
        assert measure(page)["chart_text_outside"] == []


def test_a_card_labelled_relevant_in_the_report_is_applied_and_counted_by_the_next_run(suite, tmp_path) -> None:
    root = suite["root"]
    cases = tmp_path / "cases.jsonl"
    lines = CASES.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line.strip() and json.loads(line)["id"] == REWORDED[0]:
            obj = json.loads(line)
            obj["query"] = REWORDED[1]
            lines[i] = json.dumps(obj, ensure_ascii=False)
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = _eval(root, "reworded", kb=KB, cases=cases, store=suite["store"])
    # read as a pooled set: the example set is complete by default (a card outside the gold is not
    # relevant, nothing to label), so the labelling loop is exercised with the pooled reading
    html, comparison = _report(suite, "reworded", results, "--kb", str(KB), judgements="pooled")
    (change,) = [c for c in comparison["changed_cases"] if c["id"] == REWORDED[0]]
    assert change["cause"] == "unjudged"
    card = next(d["card"] for d in change["displaced_by"] if not d["judged"])
    ranked = next(c for c in json.loads(results.read_text(encoding="utf-8"))["cases"] if c["id"] == REWORDED[0])
    assert card not in ranked["gold"] and ranked["retrieved"].index(card) < ranked["retrieved"].index(ranked["gold"][0])
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with browser() as page:
        page.open(html)
        page.allow_downloads(downloads)
        item = f'.label-item[data-case="{REWORDED[0]}"][data-card="{card}"]'
        assert page.js(f"document.querySelector('{item} .snippet').textContent.length") > 20
        assert page.js("document.getElementById('download-labels').disabled") is True
        page.click(f'{item} button[data-grade="1"]')
        page.click("#download-labels")
        (decision,) = read_download(downloads)
    assert {k: decision[k] for k in ("case", "card", "grade")} == {"case": REWORDED[0], "card": card, "grade": 1}
    assert _cli(["label", "apply", str(downloads / "labels.jsonl"), "--cases", str(cases), "--kb", str(KB)]) == 0
    gold = next(json.loads(line)["gold"] for line in cases.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line)["id"] == REWORDED[0])
    assert gold == [*ranked["gold"], card]
    again = _eval(root, "labelled", kb=KB, cases=cases, store=suite["store"])
    case = next(c for c in json.loads(again.read_text(encoding="utf-8"))["cases"] if c["id"] == REWORDED[0])
    # counted: the card at rank 1 is gold now, so hit@1 is 1 (it was 0)
    assert ranked["scores"]["hit@1"] == 0.0 and case["retrieved"][0] == card and case["scores"]["hit@1"] == 1.0
