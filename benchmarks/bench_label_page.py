"""The labelling page of a real draft: its size, and the keys a sitting takes.

``cases draft`` over the example KB (48 cards) with a log of the examples' 62 queries (each
repeated 1–3 times), ``--size 33``; then, in a headless Chromium (tests/browser.py), a labeller
who knows the examples' gold labels the first 33 queries the page shows, with the fewest keys:
arrows to each gold card, ``1`` on it, then ``r`` (the rest not relevant); ``n`` for a query
whose pool holds no gold card. Counted: the keys pressed; set beside them, the keys the page
took before ``r`` (one key per candidate, as each judgement moved to the next card), and the taps
the same sitting takes on a phone (tap the card, tap "relevant", tap "rest not relevant"; computed
from the same gold positions, not driven). The
download is applied and the cases it made checked against the gold.

Size: the page's bytes against the bound of issue 45 — 1.5 × (the pooled cards' text as the
KB holds it + draft.jsonl).

Usage: python benchmarks/bench_label_page.py WORKDIR   (prints one JSON line)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser import browser

from retrieval_gate.cli import main
from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.kb import load_kb

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SITTING = 33
KEYS = {"1": ("Digit1", 49), "n": ("KeyN", 78), "r": ("KeyR", 82), "d": ("KeyD", 68),
        "ArrowDown": ("ArrowDown", 40), "ArrowUp": ("ArrowUp", 38)}


def _cli(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def main_bench(work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    (work / ".git").mkdir(exist_ok=True)
    os.chdir(work)
    examples = [json.loads(line) for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    gold_of = {" ".join(c["query"].casefold().split()): list(c["gold"]) for c in examples}
    log = [c["query"] for i, c in enumerate(examples) for _ in range(1 + i % 3)]
    (work / "log.txt").write_text("\n".join(log) + "\n")
    for name in ("draft", "downloads"):
        if (work / name).exists():
            for p in (work / name).iterdir():
                p.unlink()
    (work / "cases.jsonl").unlink(missing_ok=True)
    (work / "cases.not-relevant.jsonl").unlink(missing_ok=True)
    assert _cli(["cases", "draft", "--queries", "log.txt", "--out", "draft", "--kb", str(EXAMPLES / "kb"),
                 "--cases", "cases.jsonl", "--size", str(SITTING)]) == 0
    drafted = {e["id"]: e for e in map(json.loads, (work / "draft" / "draft.jsonl").read_text().splitlines())}
    keys = old_keys = taps = 0
    expected: dict[str, tuple[str, ...]] = {}
    downloads = work / "downloads"
    downloads.mkdir(exist_ok=True)
    with browser() as page:
        page.open(work / "draft" / "label.html")
        page.allow_downloads(downloads)

        def press(key: str) -> None:
            nonlocal keys
            code, number = KEYS[key]
            page.key(key, code, number, text=key if len(key) == 1 else "")
            keys += key != "d"

        for _ in range(SITTING):
            case = page.js("document.getElementById('case-id').textContent")
            query = page.js("document.getElementById('query').textContent")
            cards = page.js("Array.from(document.querySelectorAll('#cands li')).map(li => li.dataset.card)")
            assert cards == [c["card"] for c in drafted[case]["candidates"]]
            gold = [c for c in cards if c in gold_of[" ".join(query.casefold().split())]]
            expected[case] = tuple(sorted(gold))
            if not gold:
                press("n")
                old_keys += 1
                taps += 1
                continue
            old_keys += len(cards)
            taps += 2 * len(gold) + 1  # tap the card, tap "relevant"; then "rest not relevant"
            for card in gold:
                focus = page.js("Array.from(document.querySelectorAll('#cands li')).findIndex(li => "
                                "li.classList.contains('focus'))")
                target = cards.index(card)
                for _ in range(abs(target - focus)):
                    press("ArrowDown" if target > focus else "ArrowUp")
                press("1")
            press("r")
        press("d")
        deadline = time.monotonic() + 30
        while not (downloads / "labels.jsonl").is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert _cli(["label", "apply", str(downloads / "labels.jsonl"), "--draft", "draft/draft.jsonl",
                 "--cases", "cases.jsonl", "--kb", str(EXAMPLES / "kb")]) == 0
    made = {c.id: tuple(sorted(c.gold)) for c in load_cases(work / "cases.jsonl").cases}
    assert made == expected, (made, expected)
    kb = load_kb(EXAMPLES / "kb")
    texts: dict[str, int] = {}
    for card in kb.cards:
        texts[card.card_id] = texts.get(card.card_id, 0) + len(card.text.encode())
    pooled = {c["card"] for e in drafted.values() for c in e["candidates"]}
    card_bytes = sum(texts[c] for c in pooled)
    draft_bytes = (work / "draft" / "draft.jsonl").stat().st_size
    page_bytes = (work / "draft" / "label.html").stat().st_size
    candidates = sum(len(drafted[c]["candidates"]) for c in expected)
    return {"queries_drafted": len(drafted), "sitting": SITTING, "candidates_in_sitting": candidates,
            "keys": keys, "keys_per_query": round(keys / SITTING, 2), "keys_before_r": old_keys,
            "keys_per_query_before_r": round(old_keys / SITTING, 2),
            "taps_computed": taps, "taps_per_query": round(taps / SITTING, 2),
            "no_answer_queries": sum(1 for g in expected.values() if not g),
            "page_bytes": page_bytes, "pooled_card_text_bytes": card_bytes, "draft_bytes": draft_bytes,
            "page_over_cards_and_draft": round(page_bytes / (card_bytes + draft_bytes), 3), "bound": 1.5}


if __name__ == "__main__":
    print(json.dumps(main_bench(Path(sys.argv[1]).resolve()), sort_keys=True))
