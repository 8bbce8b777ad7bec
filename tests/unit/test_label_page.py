"""The labelling page's pure parts: the order of its queries across intents (hand-worked), a
card's Markdown as the plain text the page shows, the ``label apply`` hint, and what the page
holds: each card's text once, the query's terms without stop words, nothing that ends its script."""

from __future__ import annotations

import json
import re

from retrieval_gate.golden.draft_entry import Candidate, DraftEntry
from retrieval_gate.golden.label_page import apply_command, page_order, render_label_page
from retrieval_gate.render.plaintext import markdown_text


def _entry(case: str, intent: str, count: int = 1, cards: tuple[str, ...] = ()) -> DraftEntry:
    return DraftEntry(id=case, query=f"query {case}", intent=intent, count=count,
                      candidates=[Candidate(card=c, sha="0" * 16) for c in cards])


def _data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="draft-data">(.*?)</script>', page, re.S)[1])


def test_page_order_interleaves_intents_by_traffic_hand_worked():
    # traffic a=3, b=1; Sainte-Laguë: (taken + ½) / traffic, the smallest next; a tie goes to more traffic
    # 1: a .167 b .5 → a; 2: a .5 b .5 → a (tie); 3: a .833 b .5 → b; 4: a .833 b 1.5 → a;
    # 5: a 1.167 b 1.5 → a (a has given its 4); 6: b
    entries = [_entry("a1", "a"), _entry("a2", "a"), _entry("a3", "a"), _entry("a4", "a"),
               _entry("b1", "b"), _entry("b2", "b")]
    assert [e.id for e in page_order(entries, traffic={"a": 3, "b": 1})] == ["a1", "a2", "b1", "a3", "a4", "b2"]


def test_page_order_without_traffic_weighs_each_intent_by_its_queries_counts():
    # a's counts sum to 2, b's to 6; (taken + ½) / traffic, the smallest next:
    # 1: a .5/2=.25 b .5/6=.083 → b; 2: a .25 b .25 → b; 3: a .25 b .417 → a; 4: a .75 b .417 → b
    entries = [_entry("a1", "a", 1), _entry("a2", "a", 1), _entry("b1", "b", 3), _entry("b2", "b", 2),
               _entry("b3", "b", 1)]
    assert [e.id for e in page_order(entries)] == ["b1", "b2", "a1", "b3", "a2"]


def test_page_order_keeps_every_query_once_and_each_intents_own_order():
    entries = [_entry(f"{i}-{n}", i) for i in "pqrs" for n in range(7)]
    ordered = page_order(entries, traffic={"p": 50, "q": 30, "r": 15, "s": 5})
    assert sorted(e.id for e in ordered) == sorted(e.id for e in entries)
    for intent in "pqrs":
        assert [e.id for e in ordered if e.intent == intent] == [f"{intent}-{n}" for n in range(7)]
    # the first ten: 50/30/15/5 % of ten → 5, 3, 1.5, 0.5 (Sainte-Laguë gives p 5, q 3, r 1, s 1 or r 2, s 0)
    first = [e.intent for e in ordered[:10]]
    assert (first.count("p"), first.count("q")) == (5, 3) and first.count("r") + first.count("s") == 2


def test_markdown_becomes_the_plain_text_a_labeller_reads():
    source = ("# Refunds\n\nA **full** refund of a `card` payment, see [the policy](https://x.test/p).\n\n"
              "1. Open *Payments*.\n2. Click **Refund**.\n   - partial\n\n| plan | days |\n|---|---|\n| Basic | 7 |\n\n"
              "<b>not bold</b> & <script>alert(1)</script>\n\n```\nrg --kb <dir>\n```\n![a chart](c.png)\n")
    assert markdown_text(source).splitlines() == [
        "Refunds", "A full refund of a card payment, see the policy.", "1. Open Payments.", "2. Click Refund.",
        "  • partial", "plan | days", "Basic | 7", "<b>not bold</b> & <script>alert(1)</script>", "rg --kb <dir>",
        "a chart"]


def test_plain_text_passes_nearly_unchanged():
    assert markdown_text("Reset the password.\nThen sign in again.") == "Reset the password. Then sign in again."


def test_apply_command_quotes_each_path():
    assert apply_command(draft="golden draft/draft.jsonl", cases="cases.jsonl", kb="kb") == (
        "retrieval-gate label apply labels.jsonl --draft 'golden draft/draft.jsonl' --cases cases.jsonl --kb kb")


def test_each_card_text_is_stored_once_and_marked_terms_leave_stop_words_out():
    texts = {"refund": "Refund a card payment within 30 days: the refund policy.", "fees": "Fees of a payout."}
    entries = [DraftEntry(id=f"log-{n}", query="How do I refund a card payment and the fees?", intent="pay",
                          candidates=[Candidate(card="refund", sha="1" * 16), Candidate(card="fees", sha="2" * 16)])
               for n in range(5)]
    page = render_label_page(entries, titles={"refund": "Refunds"}, texts=texts, graded=False)
    assert page.count("within 30 days") == 1  # five queries pool the card, its text is there once
    data = _data(page)
    assert [c[0] for c in data["cards"]] == ["fees", "refund"]
    assert data["queries"][0]["c"] == [[1, "1" * 16], [0, "2" * 16]]
    assert data["queries"][0]["terms"] == ["refund", "card", "payment", "fees"]  # no how, do, i, a, and, the


def test_card_text_cannot_end_the_pages_script_and_bidi_controls_are_shown():
    texts = {"x": "</script><script>alert(1)</script> <!-- \u202egnp.exe"}
    page = render_label_page([_entry("log-1", "i", cards=("x",))], titles={"x": "X"}, texts=texts, graded=False)
    assert page.count("</script>") == 2  # the data's own end and the page script's
    assert "\u202e" not in page
    assert _data(page)["cards"][0][2] == "</script><script>alert(1)</script> <!-- \\u202egnp.exe"


def test_a_first_line_that_repeats_the_title_is_left_out():
    page = render_label_page([_entry("log-1", "i", cards=("x",))], titles={"x": "Refunds"},
                             texts={"x": "# Refunds\n\nHow a refund works."}, graded=False)
    assert _data(page)["cards"][0][2] == "How a refund works."


def test_the_page_renders_an_empty_draft():
    page = render_label_page([], titles={}, texts={}, graded=True)
    assert _data(page)["queries"] == [] and "Nothing to label" in page
