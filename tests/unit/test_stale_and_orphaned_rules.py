"""The rules behind two dead ends of the labelling loop, hand-worked: a "not relevant" sidecar entry
stands only at the card's content hash now (``artifacts.label_sidecar.current_not_relevant``), and
an orphaned case re-judged with a relevant card loses its gone gold ids (``golden.sittings.replace_gone``)."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.artifacts.label_sidecar import current_not_relevant, not_relevant_by_case
from retrieval_gate.golden.decisions import Decision
from retrieval_gate.golden.sittings import Held, Merge, replace_gone, sort_file
from retrieval_gate.models import Card, KnowledgeBase
from retrieval_gate.score.kb_manifest import kb_manifest
from tests.helpers import write_lines

SHA_NOW = {"a": "1111", "b": "2222"}


def test_a_sidecar_entry_stands_only_at_the_cards_hash_now():
    entries = [("q1", "a", "1111"), ("q1", "b", "0000"), ("q2", "gone", "3333"), ("q2", "a", "1111")]
    assert current_not_relevant(entries, sha_now=SHA_NOW) == [("q1", "a", "1111"), ("q2", "a", "1111")]


def test_not_relevant_by_case_drops_an_edited_cards_entry_and_keeps_all_without_a_kb(tmp_path: Path):
    cards = [Card(id="a", text="alpha"), Card(id="b", text="beta")]
    kb = KnowledgeBase(cards=tuple(cards), path=str(tmp_path / "kb.jsonl"), sha256="x", format="jsonl")
    sha = {c: m.sha for c, m in kb_manifest(cards).items()}
    cases = tmp_path / "cases.jsonl"
    write_lines(tmp_path / "cases.not-relevant.jsonl",
                f'{{"case": "q1", "card": "a", "sha": "{sha["a"]}", "at": ""}}',
                '{"case": "q1", "card": "b", "sha": "old", "at": ""}')
    assert not_relevant_by_case(cases, kb=kb) == {"q1": {"a"}}
    assert not_relevant_by_case(cases, kb=None) == {"q1": {"a", "b"}}


def test_re_sending_a_not_relevant_judgement_of_an_edited_card_is_stale_not_already_applied():
    held = Held(gold={"q1": {"g": 1}}, not_relevant={})  # the sidecar's entry at "0000" is stale: not held
    d = Decision(case="q1", card="b", grade=0, sha="0000")
    out = sort_file([(1, d)], shown="labels.jsonl", held=held, sha_now=SHA_NOW, pool=None)
    assert (out.already, [s.decision for s in out.stale]) == (0, [d])


def test_an_orphaned_case_judged_relevant_loses_its_gone_ids_and_one_judged_nothing_keeps_them():
    held = Held(gold={"q1": {"gone": 1, "x-gone": 1}, "q2": {"gone": 1}, "q3": {"gone": 1}}, not_relevant={})
    merged = Merge(set_gold={"q1": {"a": 1}})
    kept = replace_gone(merged, held=held, replaces={"q1": ["gone", "x-gone"], "q2": ["gone"], "q3": ["gone"]},
                        judged={"q1", "q2"}, sha_now=SHA_NOW)
    assert merged.remove_gold == {"q1": {"gone", "x-gone"}}  # q1: a relevant card the KB holds
    assert kept == {"q2": ["gone"]}  # q2 judged, nothing relevant; q3 not judged in this sitting: untouched


def test_a_gone_id_back_in_the_kb_is_not_replaced():
    held = Held(gold={"q1": {"a": 1, "b": 1}}, not_relevant={})
    merged = Merge(set_gold={"q1": {"b": 2}})
    assert replace_gone(merged, held=held, replaces={"q1": ["a"]}, judged={"q1"}, sha_now=SHA_NOW) == {}
    assert merged.remove_gold == {}
