"""``label top-up``'s pure part (golden.topup): what is judged, what is topped up, hand-worked."""

from __future__ import annotations

from retrieval_gate.golden.topup import RunTop, judged_pairs, orphaned_cases, stale_pairs, unjudged_pool

KB = {"a", "b", "c", "d", "e", "f"}


def test_a_judgement_at_grade_zero_or_in_the_sidecar_is_judged():
    judged = judged_pairs({"q1": {"a": 1, "b": 0}, "q2": {}}, [("q2", "c"), ("q3", "d")])
    assert judged == {"q1": {"a", "b"}, "q2": {"c"}, "q3": {"d"}}


def test_every_case_gets_the_unjudged_cards_of_each_runs_top_k_once():
    judged = {"q1": {"a", "b"}, "q2": {"c"}}
    runs = [RunTop("dense", {"q1": ["a", "c", "d", "e"], "q2": ["c", "a"]}),
            RunTop("hybrid", {"q1": ["d", "b", "f"], "q2": ["c"]})]
    top = unjudged_pool(runs, judged=judged, depth=2, cases=["q1", "q2"], kb_cards=KB)
    # q1: dense's top 2 = a, c → c unjudged; hybrid's top 2 = d, b → d unjudged. q2: dense a (unjudged).
    assert {case: sorted(cards) for case, cards in top.cards.items()} == {"q1": ["c", "d"], "q2": ["a"]}
    assert top.found == {"q1": {"c": ["dense"], "d": ["hybrid"]}, "q2": {"a": ["dense"]}}
    assert top.total == 3
    # judged in the top 2: dense q1 a (yes) c (no), q2 c (yes) a (no) → 2 of 4; hybrid q1 d (no) b (yes), q2 c → 2 of 3
    assert top.judged_in_top == {"dense": (2, 4), "hybrid": (2, 3)}
    assert top.reasons == {"q1": ["unjudged"], "q2": ["unjudged"]}


def test_a_card_found_by_two_runs_is_asked_once_and_names_both():
    runs = [RunTop("x", {"q": ["e", "a"]}), RunTop("y", {"q": ["a", "e"]})]
    top = unjudged_pool(runs, judged={}, depth=2, cases=["q"], kb_cards=KB)
    assert sorted(top.cards["q"]) == ["a", "e"]
    assert top.found["q"] == {"a": ["x", "y"], "e": ["x", "y"]}


def test_a_fully_judged_case_and_a_card_gone_from_the_kb_are_left_out():
    runs = [RunTop("x", {"q1": ["a"], "q2": ["zz", "b"]})]
    top = unjudged_pool(runs, judged={"q1": {"a"}}, depth=1, cases=["q1", "q2"], kb_cards=KB)
    assert top.cards == {}  # q2's top 1 is a card the KB no longer holds


def test_orphaned_cases_are_those_whose_relevant_gold_left_the_kb():
    gold = {"q1": {"a": 1, "gone": 2}, "q2": {"gone": 0, "b": 1}, "q3": {"c": 1}}
    assert orphaned_cases(gold, kb_cards=KB) == {"q1": ["gone"]}


def test_stale_pairs_are_offered_again_even_when_judged():
    stale = stale_pairs([("q1", "a"), ("q1", "a"), ("q9", "b"), ("q1", "gone")], cases={"q1"}, kb_cards=KB)
    assert stale == {"q1": ["a"]}
    top = unjudged_pool([], judged={"q1": {"a"}}, depth=10, cases=["q1"], kb_cards=KB, stale=stale)
    assert top.cards == {"q1": ["a"]} and top.reasons == {"q1": ["stale"]} and top.found == {"q1": {"a": []}}


def test_the_page_order_is_the_same_for_the_same_inputs_and_hides_the_rank():
    runs = [RunTop("x", {"q": ["a", "b", "c", "d", "e", "f"]})]
    first = unjudged_pool(runs, judged={}, depth=6, cases=["q"], kb_cards=KB, seed=3)
    again = unjudged_pool(runs, judged={}, depth=6, cases=["q"], kb_cards=KB, seed=3)
    assert first.cards == again.cards and sorted(first.cards["q"]) == sorted(KB)
