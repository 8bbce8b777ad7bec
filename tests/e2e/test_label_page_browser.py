"""The drafting page (``cases draft``'s label.html) as a labeller uses it: a real headless Chromium,
a draft made by ``cases draft`` with the real model and a real Chroma store, 30 queries judged with
keys alone (relevant, not relevant, no answer, skip and back, arrows), the work kept across a
reload, the labels downloaded and applied, and the cases they made checked against the keys pressed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.load.cases import load_cases
from tests.browser import browser, read_download
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.model



def _cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    return int(info.value.code or 0)



def _download(page, downloads: Path) -> list[dict]:
    """Press d and read the labels file the browser saves (once the browser says it completed)."""
    page.press("d")
    return read_download(page, downloads)


def test_thirty_queries_judged_with_keys_alone_download_and_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    queries = [json.loads(line)["query"] for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    (tmp_path / "log.txt").write_text("\n".join(q for i, q in enumerate(queries) for _ in range(1 + i % 3)) + "\n")
    assert _cli(["cases", "draft", "--queries", "log.txt", "--out", "draft", "--kb", str(EXAMPLES / "kb"),
                 "--cases", "cases.jsonl", "--size", "30"]) == 0
    drafted = [json.loads(line) for line in (tmp_path / "draft" / "draft.jsonl").read_text().splitlines()]
    assert len(drafted) >= 30
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    pressed: dict[str, object] = {}  # case → the card judged relevant, or "none"
    with browser() as page:
        page.open(tmp_path / "draft" / "label.html")
        page.allow_downloads(downloads)
        total = len(drafted)
        assert page.js("document.getElementById('position').textContent") == f"1 of {total}"
        page.press("s")  # skip the first query, come back to it at the end
        for i in range(1, 30):
            if i == 15:  # the work survives a reload
                page.open(tmp_path / "draft" / "label.html")
                assert page.js("document.getElementById('position').textContent") == f"16 of {total}"
                assert page.js("document.getElementById('progress').textContent").startswith("14 of ")
            case = page.js("document.getElementById('case-id').textContent")
            cards = page.js("Array.from(document.querySelectorAll('#cands li')).map(li => li.dataset.card)")
            if i % 7 == 3:
                page.press("n")
                pressed[case] = "none"
                continue
            page.press("ArrowDown")  # the second card is relevant, the first and the rest are not
            page.press("1")
            page.press("ArrowUp")
            page.press("ArrowUp")
            for _ in range(len(cards) - 1):
                page.press("0")
            pressed[case] = cards[1]
        for _ in range(30):  # back to the skipped first query
            page.press("ArrowLeft")
        assert page.js("document.getElementById('position').textContent") == f"1 of {total}"
        case = page.js("document.getElementById('case-id').textContent")
        page.press("n")
        pressed[case] = "none"
        assert page.js("document.getElementById('progress').textContent").startswith("30 of ")
        labels = _download(page, downloads)
    assert {r["case"] for r in labels} == set(pressed)
    shapes = ({"case", "card", "grade", "sha", "at"}, {"case", "no_answer", "at"})  # the decision format
    assert all(set(r) in shapes for r in labels)
    assert _cli(["label", "apply", str(downloads / "labels.jsonl"), "--draft", "draft/draft.jsonl",
                 "--cases", "cases.jsonl", "--kb", str(EXAMPLES / "kb")]) == 0
    made = {c.id: c.gold for c in load_cases(tmp_path / "cases.jsonl").cases}
    assert made == {case: () if card == "none" else (card,) for case, card in pressed.items()}
    assert _cli(["validate", "--cases", "cases.jsonl", "--kb", str(EXAMPLES / "kb")]) == 0


def test_a_graded_golden_set_gets_a_graded_page_and_the_grades_pressed_become_its_cases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A golden set that already grades (a gold card at grade 2) makes the page graded: keys 1–3
    judge at that grade, 4 does nothing, and ``label apply`` writes the grades pressed."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    examples = [json.loads(line) for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    first = next(c for c in examples if c["gold"])
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": first["id"], "query": first["query"],
                                                      "gold": {first["gold"][0]: 2}}) + "\n")
    (tmp_path / "log.txt").write_text("\n".join(c["query"] for c in examples if c is not first) + "\n")
    assert _cli(["cases", "draft", "--queries", "log.txt", "--out", "draft", "--kb", str(EXAMPLES / "kb"),
                 "--cases", "cases.jsonl", "--size", "6"]) == 0
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    pressed: dict[str, dict[str, int]] = {}
    with browser() as page:
        page.open(tmp_path / "draft" / "label.html")
        page.allow_downloads(downloads)
        assert "relevant at that grade" in page.js("document.querySelector('p.keys').textContent")
        page.press("4")  # above the scale: no judgement
        assert page.js("document.getElementById('progress').textContent").startswith("0 of ")
        for _ in range(5):
            case = page.js("document.getElementById('case-id').textContent")
            cards = page.js("Array.from(document.querySelectorAll('#cands li')).map(li => li.dataset.card)")
            page.press("3")  # the first card at grade 3, the second at 2, the rest not relevant
            page.press("2")
            for _ in range(len(cards) - 2):
                page.press("0")
            pressed[case] = {cards[0]: 3, cards[1]: 2}
        assert page.js("document.getElementById('progress').textContent").startswith("5 of ")
        labels = _download(page, downloads)
    assert {(r["case"], r["card"]): r["grade"] for r in labels if r["grade"]} == {
        (case, card): grade for case, grades in pressed.items() for card, grade in grades.items()}
    assert _cli(["label", "apply", str(downloads / "labels.jsonl"), "--draft", "draft/draft.jsonl",
                 "--cases", "cases.jsonl", "--kb", str(EXAMPLES / "kb")]) == 0
    made = {c.id: c for c in load_cases(tmp_path / "cases.jsonl").cases}
    assert dict(made[first["id"]].grades) == {first["gold"][0]: 2}  # the case it had, kept
    for case, grades in pressed.items():
        assert dict(made[case].grades) == grades and set(made[case].gold) == set(grades)


def test_drafting_again_after_a_kb_edit_keeps_the_unchanged_judgements_in_a_page_within_its_size_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``cases draft`` twice into one folder with a KB edit between: the new page (a new draft
    text) shows the first sitting's judgements of every pair still pooled whose card did not
    change, asks again for the edited card, and opens at the first query not done. Each page is
    at most 1.5 × the pooled cards' text and the draft (the bound docs/golden-set.md states)."""
    import shutil

    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    shutil.copytree(EXAMPLES / "kb", tmp_path / "kb")
    queries = [json.loads(line)["query"] for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    (tmp_path / "log.txt").write_text("\n".join(q for i, q in enumerate(queries) for _ in range(1 + i % 3)) + "\n")
    draft = ["cases", "draft", "--queries", "log.txt", "--out", "draft", "--kb", "kb", "--size", "12"]
    assert _cli(draft) == 0
    _check_size(tmp_path)
    judged: dict[tuple[str, str], int] = {}
    with browser() as page:
        page.open(tmp_path / "draft" / "label.html")
        for _ in range(4):
            case = page.js("document.getElementById('case-id').textContent")
            cards = page.js("Array.from(document.querySelectorAll('#cands li')).map(li => li.dataset.card)")
            page.press("1")
            page.key("r", "KeyR", 82, text="r")
            judged.update({(case, c): int(i == 0) for i, c in enumerate(cards)})
        edited = next(card for (_, card), grade in judged.items() if grade == 1)
        path = next(p for p in (tmp_path / "kb").rglob("*.md") if f"id: {edited}\n" in p.read_text())
        path.write_text(path.read_text() + "\nOne more sentence, added after the first sitting.\n")
        assert _cli(draft) == 0  # draft again, into the same folder
        _check_size(tmp_path)
        redrafted = {(e["id"], c["card"]): c["sha"] for e in map(json.loads, (tmp_path / "draft" / "draft.jsonl")
                                                                   .read_text().splitlines()) for c in e["candidates"]}
        page.open(tmp_path / "draft" / "label.html")
        downloads = tmp_path / "downloads"
        downloads.mkdir()
        page.allow_downloads(downloads)
        labels = _download(page, downloads)
        position = page.js("document.getElementById('case-id').textContent")
    kept = {(r["case"], r["card"]): r["grade"] for r in labels}
    assert kept == {pair: grade for pair, grade in judged.items() if pair in redrafted and pair[1] != edited}
    assert kept and all(r["sha"] == redrafted[(r["case"], r["card"])] for r in labels)
    assert position in {case for case, card in judged if card == edited}  # the first query not done
    assert _cli(["label", "apply", str(downloads / "labels.jsonl"), "--draft", "draft/draft.jsonl",
                 "--cases", "cases.jsonl", "--kb", "kb"]) == 0


def _check_size(root: Path) -> None:
    from retrieval_gate.load.kb import load_kb

    entries = [json.loads(line) for line in (root / "draft" / "draft.jsonl").read_text().splitlines()]
    pooled = {c["card"] for e in entries for c in e["candidates"]}
    text = sum(len(c.text.encode()) for c in load_kb(root / "kb").cards if c.card_id in pooled)
    draft = (root / "draft" / "draft.jsonl").stat().st_size
    assert (root / "draft" / "label.html").stat().st_size <= 1.5 * (text + draft)
