"""compare.changes: which cases moved, the gold ranks before → after, the displacers and the
cause — on hand-built rankings, each expected value worked out by hand in the test."""

from __future__ import annotations

import pytest

from retrieval_gate.baseline.model import BaselineCase
from retrieval_gate.compare.changes import changed_cases, fold_hints, stale_gold_cards, stale_line
from retrieval_gate.compare.kb_changes import kb_diff
from retrieval_gate.compare.model import CaseChange
from retrieval_gate.errors import BaselineError
from retrieval_gate.models import Card
from retrieval_gate.score.kb_manifest import KbCard, dumps_manifest, kb_manifest, manifest_path, parse_manifest
from retrieval_gate.score.results import CaseResult
from tests.reference import FUNCTIONS


def _scores(ranked: list[str], gold: set[str]) -> dict[str, float]:
    return {"hit@3": FUNCTIONS["hit"](ranked, gold, 3), "ndcg@3": FUNCTIONS["ndcg"](ranked, gold, 3)}


def _pair(case_id: str, gold: list[str], before: list[str], after: list[str], *,
          after_scores: list[float] | None = None, grades: dict[str, int] | None = None):
    current = CaseResult(id=case_id, query=f"q {case_id}", gold=gold, grades=grades or {}, retrieved=after,
                         retrieved_scores=after_scores or [], scores=_scores(after, set(gold)),
                         slices=["overall", "locale=en"], line=7)
    old = BaselineCase(scores=_scores(before, set(gold)), slices=["overall"], ranked=before)
    return current, old


def _run(pairs, *, kb_before=None, kb_after=None, config_changed=False, rankings=True):
    current = {c.id: c for c, _ in pairs}
    base = {c.id: b for c, b in pairs}
    return changed_cases(current=current, baseline_cases=base, paired_ids=sorted(current), headline_k=3,
                         rankings=rankings, kb_before=kb_before, kb_after=kb_after, config_changed=config_changed)


def _kb(**cards: str) -> dict[str, KbCard]:
    return {card: KbCard(sha=sha, title=card.upper()) for card, sha in cards.items()}


def test_a_lost_hit_names_its_gold_ranks_the_displacers_with_margins_and_the_cause_unjudged():
    # gold g at 2 → 4 (out of the top 3): x and y climbed above it, a stayed at 1
    pair = _pair("c1", ["g"], before=["a", "g", "b", "x", "y"], after=["a", "x", "y", "g", "b"],
                 after_scores=[0.9, 0.8, 0.7, 0.6, 0.5])
    (change,) = _run([pair])
    assert change.movement == "lost-hit" and change.cause == "unjudged"
    assert [(g.card, g.rank_before, g.rank_after) for g in change.gold] == [("g", 2, 4)]
    assert change.metric == "ndcg@3"
    assert change.metric_before == pytest.approx(1 / 1.5849625007211563)  # 1/log2(3)
    assert change.metric_after == 0.0
    # x (4 → 2) and y (5 → 3) climbed; a did not (1 → 1): not a displacer
    assert [(d.card, d.rank, d.rank_before, d.margin_over_gold) for d in change.displaced_by] == \
        [("x", 2, 4, 0.2), ("y", 3, 5, 0.1)]
    assert change.line == 7 and change.slices == ["overall", "locale=en"]


def test_a_judged_non_relevant_displacer_is_a_ranking_change_not_the_labelling_queue():
    pair = _pair("c1", ["g"], before=["g", "n", "b"], after=["n", "g", "b"], grades={"g": 1, "n": 0})
    (change,) = _run([pair])
    assert change.movement == "worse" and change.cause == "ranking"
    assert [(d.card, d.judged) for d in change.displaced_by] == [("n", True)]


def test_kb_causes_in_order_gold_removed_gold_edited_displacer_added_displacer_edited_then_config():
    before_kb = _kb(g="1", h="1", a="1", x="1", y="1")
    after_kb = _kb(g="2", h="1", a="1", x="1", y="2", new="1")
    pairs = [
        _pair("edited", ["g"], before=["g", "a", "b"], after=["a", "b", "g"]),
        _pair("added", ["h"], before=["h", "a", "b"], after=["new", "h", "a"]),
        _pair("displacer-edited", ["h"], before=["h", "y", "b"], after=["y", "h", "b"]),
        _pair("config", ["h"], before=["h", "x", "b"], after=["x", "h", "b"]),
    ]
    got = {c.id: c.cause for c in _run(pairs, kb_before=before_kb, kb_after=after_kb, config_changed=True)}
    assert got == {"edited": "gold-edited", "added": "displacer-added", "displacer-edited": "displacer-edited",
                   "config": "config"}
    removed = _kb(g="1", a="1")
    (change,) = _run([_pair("gone", ["g"], before=["g", "a"], after=["a"])], kb_before=removed, kb_after=_kb(a="1"))
    assert change.cause == "gold-removed" and change.gold[0].kb_change == "removed"


def test_unchanged_rankings_and_moves_of_non_gold_cards_are_not_listed():
    same = _pair("same", ["g"], before=["g", "a", "b"], after=["g", "a", "b"])
    shuffled = _pair("shuffled", ["g"], before=["g", "a", "b"], after=["g", "b", "a"])
    assert _run([same, shuffled]) == []


def test_a_move_beyond_the_headline_k_is_listed_with_an_unchanged_metric():
    pair = _pair("deep", ["g"], before=["a", "b", "c", "g", "d"], after=["a", "b", "c", "d", "g"])
    (change,) = _run([pair])
    assert change.movement == "worse" and change.metric_before == change.metric_after == 0.0
    assert [(g.rank_before, g.rank_after) for g in change.gold] == [(4, 5)]


def test_most_harmful_first_then_improvements_largest_gain_last_gained():
    pairs = [
        _pair("small-loss", ["g"], before=["a", "b", "g"], after=["a", "b", "c"]),  # lost, nDCG 0.5 → 0
        _pair("big-loss", ["g"], before=["g", "a", "b"], after=["a", "b", "c"]),  # lost, nDCG 1 → 0
        _pair("worse", ["g"], before=["g", "a", "b"], after=["a", "g", "b"]),
        _pair("better", ["g"], before=["a", "g", "b"], after=["g", "a", "b"]),
        _pair("gained", ["g"], before=["a", "b", "c"], after=["g", "a", "b"]),
    ]
    assert [c.id for c in _run(pairs)] == ["big-loss", "small-loss", "worse", "better", "gained"]
    assert [c.movement for c in _run(pairs)] == ["lost-hit", "lost-hit", "worse", "better", "gained-hit"]


def test_a_baseline_without_rankings_lists_only_lost_and_gained_hits_with_unknown_ranks_before():
    lost = _pair("lost", ["g"], before=["g", "a", "b"], after=["a", "b", "c"])
    moved = _pair("moved", ["g"], before=["g", "a", "b"], after=["a", "g", "b"])
    (change,) = _run([lost, moved], rankings=False)
    assert change.id == "lost" and change.gold[0].rank_before is None


def test_stale_labels_when_most_lost_hits_are_on_edited_gold_and_hints_folded():
    kb_before, kb_after = _kb(g="1", h="1", a="1"), _kb(g="2", h="1", a="1")
    pairs = [_pair("c1", ["g"], before=["g", "a"], after=["a", "b", "c", "g"]),
             _pair("c2", ["g"], before=["g", "b"], after=["a", "b", "c"]),
             _pair("c3", ["h"], before=["h", "b"], after=["a", "b", "c"])]
    changes = _run(pairs, kb_before=kb_before, kb_after=kb_after)
    assert stale_gold_cards(changes) == ["g"]  # 2 of 3 lost hits on the edited g
    assert stale_line(["g"]) == ("1 gold card of lost cases was edited by this PR (g): the edit may have removed "
                                 "the answer (check the card) or the labels are stale (update the cases)")
    assert stale_gold_cards(changes[2:]) == []  # c3 alone: an unjudged card, not a label problem
    hints = [CaseChange(id=c, metric="hit@3", baseline=1, current=0, delta=-1, possibly_relevant="a")
             for c in ("c1", "c2", "c3")]
    assert [h.possibly_relevant for h in fold_hints(hints, changes)] == [None, None, "a"]


def test_a_deleted_gold_card_is_not_read_as_an_edited_one():
    kb_before, kb_after = _kb(g="1", h="1", a="1"), _kb(h="2", a="1")  # g deleted, h edited
    deleted = [_pair("c1", ["g"], before=["g", "a"], after=["a", "b", "c"]),
               _pair("c2", ["g"], before=["g", "b"], after=["a", "b", "c"])]
    changes = _run(deleted, kb_before=kb_before, kb_after=kb_after)
    assert [c.cause for c in changes] == ["gold-removed", "gold-removed"]
    assert stale_gold_cards(changes) == []  # no "1 gold card of lost cases was edited by this PR"
    edited = _pair("c3", ["h"], before=["h", "a"], after=["a", "b", "c"])
    changes = _run([*deleted, edited], kb_before=kb_before, kb_after=kb_after)
    assert stale_gold_cards(changes) == ["h"]  # the edited card alone, of the loss the deletion does not explain


def test_the_manifest_hashes_content_per_card_and_round_trips():
    one = kb_manifest([Card(id="p#1", parent_id="p", title="P", text="a"), Card(id="p#2", parent_id="p", text="b"),
                       Card(id="q", title="Q", text="c")])
    reordered = kb_manifest([Card(id="q", title="Q", text="c"), Card(id="p#2", parent_id="p", text="b"),
                             Card(id="p#1", parent_id="p", title="P", text="a")])
    edited = kb_manifest([Card(id="p#1", parent_id="p", title="P", text="a"), Card(id="p#2", parent_id="p", text="B"),
                          Card(id="q", title="Q", text="c")])
    assert one == reordered and list(one) == ["p", "q"] and one["p"].title == "P"
    assert edited["p"].sha != one["p"].sha and edited["q"] == one["q"]
    text = dumps_manifest(one, suite="default")
    assert parse_manifest(text, source="m") == one and len(text.splitlines()) == 6 + 2  # one line per card
    diff = kb_diff(before=one, after={**edited, "r": KbCard(sha="0", title="R")})
    assert ([c.card for c in diff.edited], [c.card for c in diff.added], diff.removed) == (["p"], ["r"], [])
    assert manifest_path("baselines/default.json") == "baselines/default.kb.json"
    with pytest.raises(BaselineError, match="m:1: not a KB manifest"):
        parse_manifest("{oops", source="m")


def test_a_kb_change_without_a_manifest_never_puts_a_case_in_the_labelling_queue():
    pair = _pair("c1", ["g"], before=["g", "a", "b"], after=["a", "b", "c"])
    (seen,) = _run([pair])
    assert seen.cause == "unjudged"
    current = {pair[0].id: pair[0]}
    (unseen,) = changed_cases(current=current, baseline_cases={"c1": pair[1]}, paired_ids=["c1"], headline_k=3,
                              rankings=True, kb_before=None, kb_after=None, config_changed=False,
                              kb_changed_unseen=True)
    assert unseen.cause == "ranking"
    hint = CaseChange(id="c1", metric="hit@3", baseline=1, current=0, delta=-1, possibly_relevant="a")
    assert fold_hints([hint], [unseen])[0].possibly_relevant is None
