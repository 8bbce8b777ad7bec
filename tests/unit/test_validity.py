"""score.validity: rankings that cannot be a measurement (every one empty, most ids not KB cards)
are refused with a message naming the retriever and a few offending ids; counted by hand."""

from __future__ import annotations

from retrieval_gate.models import Card, KnowledgeBase, RankedList
from retrieval_gate.score.validity import NOT_CARD_SHARE, check_rankings

# two cards; card "b" is split into two chunks b#0, b#1
KB = KnowledgeBase(cards=(Card(id="a", text="x"), Card(id="b#0", text="y", parent_id="b"),
                          Card(id="b#1", text="z", parent_id="b")), path="kb.jsonl", sha256="0", format="jsonl")


def ranked(*ids: str) -> RankedList:
    return RankedList(ids=ids)


def test_every_ranking_empty_is_refused_naming_the_retriever():
    check = check_rankings([ranked(), ranked(), ranked()], kb=KB)
    problem = check.problem("retriever 'python:glue:search'")
    assert problem is not None
    assert problem.startswith("retriever 'python:glue:search': every ranking is empty")
    assert "none of the 3 cases got an id (3 answered no id)" in problem


def test_every_case_failed_is_every_ranking_empty_and_quotes_one_reason_bounded():
    reason = "KeyError: 'card_id'" + "x" * 5000
    check = check_rankings([RankedList(error=reason), RankedList(error="other"), None], kb=KB)
    problem = check.problem("retriever 'r'")
    assert problem is not None and "every ranking is empty" in problem
    assert "3 failed (e.g. 'KeyError: 'card_id'" in problem.replace('"', "'")
    assert len(problem) < 600  # the 5,000-character reason is cut, never echoed whole


def test_one_case_with_an_id_is_a_measurement():
    assert check_rankings([ranked(), ranked("a"), ranked()], kb=KB).problem("r") is None


def test_most_distinct_ids_not_cards_is_refused_with_a_few_of_them():
    # distinct: docs/1.md, docs/2.md, a, docs/3.md → 3 of 4 are not cards (75% > 50%)
    check = check_rankings([ranked("docs/1.md", "docs/2.md"), ranked("a", "docs/1.md"), ranked("docs/3.md")], kb=KB)
    assert (check.distinct, check.not_cards) == (4, ("docs/1.md", "docs/2.md", "docs/3.md"))
    problem = check.problem("retriever 'python:glue:search'")
    assert problem is not None
    assert "3 of the 4 distinct ids it returned are not cards of the KB kb.jsonl" in problem
    assert "'docs/1.md', 'docs/2.md', 'docs/3.md'" in problem
    assert "id_key" in problem and "the KB's look like 'a'" in problem


def test_exactly_half_not_cards_is_scored_with_a_warning_not_refused():
    assert NOT_CARD_SHARE == 0.5
    check = check_rankings([ranked("a", "stray")], kb=KB)  # 1 of 2 distinct: not more than half
    assert check.problem("r") is None
    warning = check.warning("retriever 'r'")
    assert warning is not None and "1 of the 2 distinct ids" in warning and "'stray'" in warning
    assert "score as misses" in warning


def test_chunk_ids_count_as_their_card_and_distinct_ids_count_once():
    # b#0 and b#1 are card b; "x" returned by every case still counts once: 1 of 3 distinct
    check = check_rankings([ranked("b#0", "x"), ranked("b#1", "x"), ranked("a", "x")], kb=KB)
    assert (check.distinct, check.not_cards) == (3, ("x",))
    assert check.problem("r") is None


def test_the_text_none_is_named_first_with_what_it_means():
    check = check_rankings([ranked("p1", "p2", "p3", "p4", "None")], kb=KB)
    problem = check.problem("retriever 'r'")
    assert problem is not None
    assert "e.g. 'None', 'p1', 'p2' and 2 more" in problem
    assert "str(None)" in problem


def test_offending_ids_are_quoted_and_bounded():
    long_id = "\x1b[31m" + "z" * 10_000
    problem = check_rankings([ranked(long_id)], kb=KB).problem("r")
    assert problem is not None
    assert "\x1b" not in problem and "\\x1b" in problem  # repr: the escape shown, never sent
    assert len(problem) < 800


def test_without_a_kb_only_empty_rankings_are_checked():
    assert check_rankings([ranked("anything")], kb=None).problem("r") is None
    assert check_rankings([ranked()], kb=None).problem("r") is not None


def test_the_text_none_is_named_first_even_when_returned_last_among_the_first_few():
    problem = check_rankings([ranked("p1", "None", "p2")], kb=KB).problem("r")
    assert problem is not None and "e.g. 'None', 'p1', 'p2'" in problem
