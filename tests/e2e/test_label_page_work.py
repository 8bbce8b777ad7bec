"""The labelling page's work in a real headless Chromium, on drafts written here from a small KB
(no model): a redraft keeps the judgements of the pairs it still holds and not of a card whose
text changed; two labellers in one browser profile keep their own work; a 390 px phone labels by
taps alone (a card, the buttons, "rest not relevant") and ``label apply`` takes the download, run
as the page's hint prints it; the query stays in view when the page scrolls and on the next
query (measured rects); card ids ``__proto__``, ``constructor``, ``toString`` are ids like any;
and the page's size against the pooled cards' text and the draft."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.golden.draft_entry import Candidate, DraftEntry, Pool
from retrieval_gate.golden.draft_folder import draft_text
from retrieval_gate.golden.draw import case_id
from retrieval_gate.golden.label_page import apply_command, render_label_page
from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.kb import load_kb
from retrieval_gate.score.kb_manifest import kb_manifest
from tests.browser import browser, read_download
from tests.conftest import EXAMPLES

TOPICS = ["refund a card payment", "refund a bank transfer", "payout schedule", "payout fees", "invoice reminders",
          "recurring invoices", "two factor sign in", "delete the account", "export data", "change the plan",
          "cancel the subscription", "update the card", "quickbooks sync", "xero sync", "tax rates", "currencies",
          "team members", "roles and permissions", "api keys", "webhooks", "receipts", "disputes", "chargebacks"]
TRICKY = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"]


def _cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    return int(info.value.code or 0)


def _kb(root: Path) -> Path:
    """A KB of Markdown cards (file name = card id), the tricky ids among them."""
    kb = root / "kb"
    kb.mkdir()
    for n, topic in enumerate(TOPICS):
        name = topic.replace(" ", "-")
        (kb / f"{name}.md").write_text(f"# {topic.capitalize()}\n\nHow to {topic} in Ledgerly, **step by step**: "
                                       f"open *Settings*, then `{name}`. Card number {n}.\n\n- one\n- two\n")
    for name in TRICKY:
        (kb / f"{name}.md").write_text(f"# The {name} card\n\nA card whose id is {name}.\n")
    return kb


def _draft(root: Path, kb: Path, queries: list[tuple[str, str, int, list[str]]], *, folder: str = "draft",
           labeller: str = "", ids: list[str] | None = None) -> list[DraftEntry]:
    """draft.jsonl and label.html as ``cases draft`` writes them, for (query, intent, count, cards)."""
    cards = load_kb(kb).cards
    manifest = kb_manifest(cards)
    texts = {c.card_id: c.text for c in cards}
    entries = [DraftEntry(id=(ids[n] if ids else case_id(q)), query=q, intent=intent, count=count,
                          candidates=[Candidate(card=c, sha=manifest[c].sha) for c in pooled],
                          pool=Pool(depth=10, systems=["dense", "bm25"]), log="log.txt")
               for n, (q, intent, count, pooled) in enumerate(queries)]
    out = root / folder
    out.mkdir()
    text = draft_text(entries)
    (out / "draft.jsonl").write_text(text)
    apply = apply_command(draft=f"{folder}/draft.jsonl", cases="cases.jsonl", kb="kb")
    (out / "label.html").write_text(render_label_page(entries, titles={c: m.title for c, m in manifest.items()},
                                                      texts=texts, graded=False, labeller=labeller, key_text=text,
                                                      apply=apply))
    return entries


def _queries(n: int, width: int = 8) -> list[tuple[str, str, int, list[str]]]:
    names = [t.replace(" ", "-") for t in TOPICS]
    return [(f"how do I {TOPICS[i % len(TOPICS)]} number {i}", f"intent-{i % 3}", 1 + i % 4,
             [names[(i + k) % len(names)] for k in range(width)]) for i in range(n)]



def _shown(page) -> tuple[str, list[str], list[str]]:
    """The case shown, its cards, and each card's class (focus / rel / not)."""
    case = page.js("document.getElementById('case-id').textContent")
    cards = page.js("Array.from(document.querySelectorAll('#cands li')).map(li => li.dataset.card)")
    classes = page.js("Array.from(document.querySelectorAll('#cands li')).map(li => li.className.trim())")
    return case, cards, classes




def _download(page, folder: Path, *, tap: bool = False) -> list[dict]:
    folder.mkdir()
    page.allow_downloads(folder)
    if tap:
        page.tap_element("#download-labels")
    else:
        page.press("d")
    return read_download(page, folder)


def _rects(page) -> dict:
    return page.js("""(() => { const r = id => { const b = document.getElementById(id).getBoundingClientRect();
      return {top: b.top, bottom: b.bottom}; };
      const lis = document.querySelectorAll('#cands li'), f = document.querySelector('#cands li.focus');
      const bar = window.getComputedStyle(document.getElementById('actions')).position === 'fixed'
        ? document.getElementById('actions').getBoundingClientRect().top : window.innerHeight;
      return {query: r('query'), top: r('top'), first: lis[0].getBoundingClientRect().top,
              focus: f ? {top: f.getBoundingClientRect().top, bottom: f.getBoundingClientRect().bottom} : null,
              bar: bar, height: window.innerHeight, scroll: window.scrollY,
              text: document.getElementById('query').textContent}; })()""")


def _in_view(r: dict) -> bool:
    return r["query"]["top"] >= 0 and r["query"]["bottom"] <= min(r["bar"], r["height"])


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_redraft_keeps_the_judgements_of_unchanged_pairs_and_asks_again_for_an_edited_card(repo: Path):
    kb = _kb(repo)
    queries = _queries(6)
    _draft(repo, kb, queries)
    judged: dict[tuple[str, str], int] = {}
    with browser() as page:
        page.open(repo / "draft" / "label.html")
        for n in range(3):  # the first three queries the page shows: the first card relevant, the rest not
            case, cards, _ = _shown(page)
            page.press("1")
            page.press("r")
            judged.update({(case, c): int(i == 0) for i, c in enumerate(cards)})
            if n == 0:
                first_case, edited = case, cards[0]
        said_none, none_cards = _shown(page)[:2]
        page.press("n")  # the fourth: no card answers it
        assert page.js("document.getElementById('progress').textContent").startswith("4 of 6 ")
        with (kb / f"{edited}.md").open("a") as f:  # a KB edit between the drafts: one judged card changes
            f.write("\nA sentence added after the first sitting.\n")
        entries = _draft(repo, kb, queries, folder="draft2")
        sha = {(e.id, c.card): c.sha for e in entries for c in e.candidates}
        page.open(repo / "draft2" / "label.html")  # a new draft: another key of its own, the same labeller
        # three queries kept (the no-answer one too: its cards are the same), the edited card's query asked again
        assert page.js("document.getElementById('progress').textContent").startswith("3 of 6 ")
        case, cards, classes = _shown(page)  # it opens at the first query not done: the one with the edited card
        assert case == first_case
        assert classes[cards.index(edited)] == "focus"  # unjudged, and focused
        assert all(("rel" if judged[(case, c)] else "not") in k for c, k in zip(cards, classes, strict=True)
                   if c != edited)
        labels = _download(page, repo / "downloads")
    kept = {(r["case"], r["card"]): r["grade"] for r in labels if "card" in r}
    assert kept == {pair: grade for pair, grade in judged.items() if pair != (first_case, edited)}
    assert all(r["sha"] == sha[(r["case"], r["card"])] for r in labels if "card" in r)
    assert [r["case"] for r in labels if r.get("no_answer")] == [said_none]
    assert none_cards
    assert _cli(["label", "apply", str(repo / "downloads" / "labels.jsonl"), "--draft", "draft2/draft.jsonl",
                 "--cases", "cases.jsonl", "--kb", "kb"]) == 0


def test_two_labellers_in_one_browser_profile_keep_their_own_work(repo: Path):
    kb = _kb(repo)
    queries = _queries(4, width=4)
    _draft(repo, kb, queries, folder="alice", labeller="alice")
    _draft(repo, kb, queries, folder="bob", labeller="bob")
    with browser() as page:
        page.open(repo / "alice" / "label.html")
        alice_case, alice_cards, _ = _shown(page)
        page.press("1")
        page.press("r")
        page.open(repo / "bob" / "label.html")  # the same draft, the same browser profile, another labeller
        assert page.js("document.getElementById('progress').textContent").startswith("0 of 4 queries done · 0 ")
        case, cards, classes = _shown(page)
        assert case == alice_case and not any("rel" in k or "not" in k for k in classes)
        page.press("0")
        page.press("1")
        page.press("r")
        bob = _download(page, repo / "bob-downloads")
        page.open(repo / "alice" / "label.html")
        assert page.js("document.getElementById('progress').textContent").startswith("1 of 4 ")
        alice = _download(page, repo / "alice-downloads")
    assert {(r["card"], r["grade"]) for r in alice} == {(c, int(i == 0)) for i, c in enumerate(alice_cards)}
    assert {(r["card"], r["grade"]) for r in bob} == {(c, int(i == 1)) for i, c in enumerate(cards)}
    assert {r["labeller"] for r in alice} == {"alice"} and {r["labeller"] for r in bob} == {"bob"}
    assert _cli(["label", "agree", str(repo / "alice-downloads" / "labels.jsonl"),
                 str(repo / "bob-downloads" / "labels.jsonl"), "--draft", "alice/draft.jsonl"]) in (0, 1)


def test_a_390px_phone_labels_by_taps_and_label_apply_takes_the_download(repo: Path):
    kb = _kb(repo)
    queries = _queries(6)
    _draft(repo, kb, queries)
    pressed: dict[str, str | None] = {}
    with browser() as page:
        page.open(repo / "draft" / "label.html", width=390, height=844, mobile=True)
        assert page.js("window.innerWidth") == 390
        assert page.js("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
        for n in range(6):
            case, cards, _ = _shown(page)
            if n == 2:
                page.tap_element("#actions button[data-key='n']")
                pressed[case] = None
            elif n == 4:
                page.tap_element("#actions button[data-key='s']")  # skipped: labelled at the end
                skipped = case
            else:
                page.tap_element("#cands li", 2)  # a tap focuses the third card
                assert "focus" in _shown(page)[2][2]
                page.tap_element("#actions button[data-key='1']")
                page.js("new Promise(done => setTimeout(done, 30))")  # the next judgement is later
                page.tap_element("#actions button[data-key='r']")
                pressed[case] = cards[2]
            if n < 5:
                r = _rects(page)
                assert r["text"] == queries_shown(page) and _in_view(r), r
                assert r["scroll"] == 0 and r["first"] >= r["top"]["bottom"], r
        page.tap_element("#actions button[data-key='ArrowLeft']")  # the last query stays; back once: the skipped one
        case, cards, _ = _shown(page)
        assert case == skipped
        page.tap_element("#cands li", 0)
        page.tap_element("#actions button[data-key='1']")
        page.tap_element("#actions button[data-key='r']")
        pressed[case] = cards[0]
        assert page.js("document.getElementById('progress').textContent").startswith("6 of 6 ")
        before = page.js("new Date().toISOString()")
        labels = _download(page, repo / "downloads", tap=True)
        hint = page.js("document.querySelector('#saved code').textContent")
        page.screenshot(repo / "phone.png")
    assert hint == "retrieval-gate label apply labels.jsonl --draft draft/draft.jsonl --cases cases.jsonl --kb kb"
    assert all(r["at"] < before for r in labels)  # each judgement's own time, not the download's
    first = [r for r in labels if r["case"] == next(iter(pressed))]
    relevant_at = next(r["at"] for r in first if r["grade"] == 1)
    assert all(r["at"] > relevant_at for r in first if r["grade"] == 0)
    args = shlex.split(hint)[1:]
    args[2] = str(repo / "downloads" / "labels.jsonl")  # the path the browser saved it to
    assert _cli(args) == 0  # as the hint prints it, from the repository root
    made = {c.id: c.gold for c in load_cases(repo / "cases.jsonl").cases}
    assert made == {case: () if card is None else (card,) for case, card in pressed.items()}


@pytest.mark.parametrize(("width", "height", "mobile"), [(1400, 900, False), (390, 844, True)])
def test_the_query_stays_in_view_while_the_cards_scroll_and_on_the_next_query(repo: Path, width: int, height: int,
                                                                             mobile: bool):
    kb = _kb(repo)
    queries = _queries(3, width=20)
    _draft(repo, kb, queries)
    with browser() as page:
        page.open(repo / "draft" / "label.html", width=width, height=height, mobile=mobile)
        first = page.js("document.getElementById('query').textContent")
        for _ in range(19):
            page.press("0")
        r = _rects(page)
        assert r["scroll"] > 0 and r["text"] == first and _in_view(r), r  # scrolled down to the 20th card
        assert r["focus"]["top"] >= r["top"]["bottom"] and r["focus"]["bottom"] <= r["bar"], r  # not under either bar
        page.screenshot(repo / f"scrolled-{width}.png")
        page.press("0")  # the last card: the next query
        r = _rects(page)
        assert r["text"] != first and r["text"] == queries_shown(page) and _in_view(r), r
        assert r["scroll"] == 0 and r["first"] >= r["top"]["bottom"], r
        assert page.script_errors() == []


def queries_shown(page) -> str:
    case = page.js("document.getElementById('case-id').textContent")
    return page.js(f"JSON.parse(document.getElementById('draft-data').textContent).queries"
                   f".find(q => q.id === {json.dumps(case)}).query")


def test_card_and_case_ids_named_like_object_properties_are_ids_like_any(repo: Path):
    kb = _kb(repo)
    _draft(repo, kb, [("the proto card", "a", 1, TRICKY), ("no answer here", "a", 1, TRICKY[::-1])],
           ids=["__proto__", "constructor"])
    with browser() as page:
        page.open(repo / "draft" / "label.html")
        assert page.js("document.getElementById('progress').textContent").startswith("0 of 2 queries done · 0 ")
        _, cards, classes = _shown(page)
        assert cards == TRICKY and classes == ["focus", "", "", "", ""]  # none reads as already judged
        assert page.js("document.querySelectorAll('#cands .grade')[0].textContent") == ""
        page.press("1")
        page.press("r")
        page.press("n")
        assert page.js("document.getElementById('progress').textContent").startswith("2 of 2 ")
        labels = _download(page, repo / "downloads")
        assert page.script_errors() == []
    assert [(r["case"], r.get("card"), r.get("grade"), r.get("no_answer")) for r in labels] == [
        ("__proto__", "__proto__", 1, None), ("__proto__", "constructor", 0, None), ("__proto__", "toString", 0, None),
        ("__proto__", "hasOwnProperty", 0, None), ("__proto__", "valueOf", 0, None),
        ("constructor", None, None, True)]
    assert _cli(["label", "apply", str(repo / "downloads" / "labels.jsonl"), "--draft", "draft/draft.jsonl",
                 "--cases", "cases.jsonl", "--kb", "kb"]) == 0
    assert {c.id: c.gold for c in load_cases(repo / "cases.jsonl").cases} == {"__proto__": ("__proto__",),
                                                                              "constructor": ()}


def test_snippets_mark_whole_words_not_stop_words_and_show_markdown_as_text(repo: Path):
    kb = repo / "kb"
    kb.mkdir()
    (kb / "cli.md").write_text("# Commands\n\nEvery **command** is Mandatory: see <b>the</b> [manual](x.md) and"
                               " the commander.\n")
    _draft(repo, kb, [("the command and the manual", "a", 1, ["cli"])])
    with browser() as page:
        page.open(repo / "draft" / "label.html")
        marks = page.js("Array.from(document.querySelectorAll('#cands mark')).map(m => m.textContent)")
        snippet = page.js("document.querySelector('#cands .snippet').textContent")
        assert page.js("document.querySelectorAll('#cands b, #cands a').length") == 0
    assert marks == ["command", "manual"]  # not "and" in Mandatory, not "command" in commander, not "the"
    assert snippet == "Every command is Mandatory: see <b>the</b> manual and the commander."
def test_the_page_is_within_one_and_a_half_times_the_pooled_cards_text_and_the_draft():
    kb = load_kb(EXAMPLES / "kb")
    manifest = kb_manifest(kb.cards)
    texts: dict[str, list[tuple[str, str]]] = {}
    for card in kb.cards:
        texts.setdefault(card.card_id, []).append((card.id, card.text))
    joined = {c: "\n\n".join(t for _, t in sorted(parts)) for c, parts in texts.items()}
    ids = sorted(manifest)
    queries = [json.loads(line)["query"] for line in (EXAMPLES / "cases.jsonl").read_text().splitlines()]
    pools = [[ids[(n * 7 + k) % len(ids)] for k in range(15)] for n in range(len(queries))]
    entries = [DraftEntry(id=f"log-{n:04d}", query=q, intent=f"i{n % 5}", count=1 + n % 3,
                          candidates=[Candidate(card=c, sha=manifest[c].sha) for c in pools[n]])
               for n, q in enumerate(queries)]
    draft = draft_text(entries)
    page = render_label_page(entries, titles={c: m.title for c, m in manifest.items()}, texts=joined, graded=False,
                             key_text=draft, apply=apply_command(draft="d/draft.jsonl", cases="cases.jsonl", kb="kb"))
    pooled = {c.card for e in entries for c in e.candidates}
    bound = 1.5 * (sum(len(joined[c].encode()) for c in pooled) + len(draft.encode()))
    assert len(page.encode()) <= bound
    # what the page held before: each candidate's text copied, ~62 × 15 texts of ~2 KB
    assert len(page.encode()) < sum(len(joined[c.card].encode()) for e in entries for c in e.candidates) / 5


