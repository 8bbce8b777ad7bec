"""The history site in a real headless Chromium (tests/browser.py), opened from file:// as built by
``retrieval-gate history`` from a real repository: no request leaves the page, no script error, at
1,400 px and at a phone's 390 px (no sideways scroll there), light and dark; chart text inside its
chart and apart; the case grid sorts from the keyboard."""

from __future__ import annotations

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
                                     date=f"2026-04-{r + 1:02d}T09:00:00+00:00",
                                     message=f"Merge pull request #{100 + r} from team/x"))
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
        return page.js("Array.from(document.querySelectorAll('#grid tbody tr td.id')).map(td => td.textContent)")

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
    assert "config.model: m1 → m2" in page.js("document.querySelector('#refreshes').nextElementSibling.innerText")
    assert page.js("document.querySelectorAll('.multiples svg').length") == 2  # locale=en-US, locale=pt-BR
