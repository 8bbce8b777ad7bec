"""The labelling loop's pure part (compare/label_queue.py, golden/decisions.py) and ``label apply`` / ``label queue`` on
small files: what a decision adds, where "not relevant" is kept, what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.compare.changes_model import ChangedCase, Displacer, GoldRank
from retrieval_gate.compare.label_queue import label_queue
from retrieval_gate.golden.decisions import Decision
from retrieval_gate.golden.sittings import Held, edit_jsonl, edit_qrels, merge, sort_file
from retrieval_gate.score.kb_manifest import KbCard, kb_manifest
from tests.helpers import run_cli, write_lines

MANIFEST = {"a": KbCard(sha="1111", title="A"), "b": KbCard(sha="2222", title="B"), "g": KbCard(sha="3333")}


def _decision(case: str, card: str, grade: int, sha: str) -> Decision:
    return Decision(case=case, card=card, grade=grade, sha=sha, at="2026-01-01T00:00:00Z")


def _change(cause: str) -> ChangedCase:
    return ChangedCase(id="q1", query="how?", gold=[GoldRank(card="g", rank_before=1, rank_after=3)],
                       movement="worse", metric="ndcg@5", metric_before=1.0, metric_after=0.5, cause=cause,
                       displaced_by=[Displacer(card="b", rank=2), Displacer(card="a", rank=1),
                                     Displacer(card="g2", rank=2, judged=True)])


def test_the_queue_holds_the_unjudged_displacers_of_unjudged_cases_by_rank_less_decided_pairs():
    queue = label_queue(changes=[_change("unjudged"), _change("ranking")], manifest=MANIFEST,
                        snippet={"a": "text of a"}, decided=set())
    assert [(i.case, i.card, i.rank, i.title, i.sha, i.snippet) for i in queue] == [
        ("q1", "a", 1, "A", "1111", "text of a"), ("q1", "b", 2, "B", "2222", "")]
    assert [i.card for i in label_queue(changes=[_change("unjudged")], manifest=MANIFEST, snippet={},
                                        decided={("q1", "a")})] == ["b"]


def test_a_file_sorts_into_already_applied_stale_and_current_and_a_stale_pair_judged_again_is_not_set_aside():
    sha_now = {c: m.sha for c, m in MANIFEST.items()}
    held = Held(gold={"q1": {"g": 1}}, not_relevant={("q1", "b"): {"2222"}})
    records = [(1, _decision("q1", "g", 1, "3333")),  # the gold holds it
               (2, _decision("q1", "b", 0, "2222")),  # the sidecar holds it at this hash
               (3, _decision("q2", "a", 1, "0000")),  # judged at another content: stale
               (4, _decision("q1", "b", 1, "old")),  # stale, but line 2 judges b at its content now
               (5, _decision("q1", "a", 0, "1111")), (5, _decision("q1", "a", 0, "1111"))]  # current, once
    part = sort_file(records, shown="l.jsonl", held=held, sha_now=sha_now, pool=None)
    assert part.already == 2 and [line for line, _ in part.current] == [5]
    assert [(s.where, s.decision.card, s.kb_sha) for s in part.stale] == [(("l.jsonl", 3), "a", "1111")]
    assert part.stale[0].as_json()["judgement"]["grade"] == 1
    assert part.superseded == 1


def test_a_different_grade_for_a_pair_the_golden_set_holds_is_a_conflict_unless_prefer_settles_it():
    sha_now = {c: m.sha for c, m in MANIFEST.items()}
    held = Held(gold={"q1": {"g": 1}}, not_relevant={("q1", "a"): {"1111"}})
    records = [(("l", 1), _decision("q1", "g", 0, "3333")), (("l", 2), _decision("q1", "a", 2, "1111")),
               (("l", 3), _decision("q1", "b", 1, "2222"))]
    plain = merge(records, held=held, sha_now=sha_now, prefer=None)
    assert [where for where, _ in plain.conflicts] == [("l", 1), ("l", 2)]
    assert "grade 0 here, the golden set holds grade 1" in plain.conflicts[0][1]
    assert plain.set_gold == {"q1": {"b": 1}}
    new = merge(records, held=held, sha_now=sha_now, prefer="new")
    assert new.set_gold == {"q1": {"a": 2, "b": 1}} and new.remove_gold == {"q1": {"g"}} and new.replaced == 2
    assert [d.card for d in new.not_relevant] == ["g"] and ("q1", "a") in new.unrelevant
    old = merge(records, held=held, sha_now=sha_now, prefer="old")
    assert old.set_gold == {"q1": {"b": 1}} and not old.remove_gold and old.kept_old == 2 and not old.conflicts


def test_jsonl_gold_grows_in_place_and_other_lines_are_kept_byte_for_byte():
    text = ('{"id": "q1", "query": "é?", "gold": ["g"], "kind": "golden"}\n'
            '{"id":"q2","query":"x","gold":{"g":2}}\n# not json\n')
    out = edit_jsonl(text, set_gold={"q1": {"a": 1}, "q2": {"a": 1}}, remove_gold={})
    lines = out.split("\n")
    assert json.loads(lines[0]) == {"id": "q1", "query": "é?", "gold": ["g", "a"], "kind": "golden"}
    assert list(json.loads(lines[0])) == ["id", "query", "gold", "kind"] and "é" in lines[0]
    assert json.loads(lines[1])["gold"] == {"g": 2, "a": 1}
    assert lines[2:] == ["# not json", ""]
    graded = edit_jsonl(text, set_gold={"q1": {"a": 2}}, remove_gold={}).split("\n")[0]
    assert json.loads(graded)["gold"] == {"g": 1, "a": 2}  # a grade above 1 makes the case graded
    alias = edit_jsonl('{"id": "q1", "relevant_doc_ids": ["g"]}\r\n', set_gold={"q1": {"a": 1}}, remove_gold={})
    assert alias == '{"id": "q1", "relevant_doc_ids": ["g", "a"]}\r\n'  # the line's own field, its line ending
    taken = edit_jsonl(text, set_gold={}, remove_gold={"q1": {"g"}, "q2": {"g"}}).split("\n")
    assert json.loads(taken[0])["gold"] == [] and json.loads(taken[1])["gold"] == {}


def test_qrels_get_one_line_per_judgement_in_the_files_own_layout():
    beir = "query-id\tcorpus-id\tscore\nq1\tg\t1\n"
    assert edit_qrels(beir, set_gold={"q1": {"a": 2}}, remove_gold={}) == beir + "q1\ta\t2\n"
    trec = "q1 0 g 1"
    assert edit_qrels(trec, set_gold={"q1": {"a": 1}}, remove_gold={}) == "q1 0 g 1\nq1 0 a 1\n"
    assert edit_qrels(beir, set_gold={"q1": {"g": 2}}, remove_gold={}) == "query-id\tcorpus-id\tscore\nq1\tg\t2\n"
    assert edit_qrels(beir + "q2\tg\t1\n", set_gold={}, remove_gold={"q1": {"g"}}) == (
        "query-id\tcorpus-id\tscore\nq2\tg\t1\n")


def _files(tmp_path: Path) -> tuple[Path, Path, dict[str, KbCard]]:
    kb = write_lines(tmp_path / "kb.jsonl", '{"id": "g", "text": "gold text"}', '{"id": "a", "text": "other"}')
    cases = write_lines(tmp_path / "cases.jsonl", '{"id": "q1", "query": "how?", "gold": ["g"]}')
    from retrieval_gate.load.kb import load_kb

    return kb, cases, kb_manifest(load_kb(kb).cards)


def test_label_apply_adds_relevant_keeps_not_relevant_beside_the_cases_and_says_what_it_did(tmp_path, capsys):
    kb, cases, manifest = _files(tmp_path)
    labels = write_lines(tmp_path / "labels.jsonl", json.dumps(
        {"case": "q1", "card": "a", "grade": 0, "sha": manifest["a"].sha, "at": "t"}))
    code, out, _ = run_cli(["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)], capsys)
    assert code == 0 and "not relevant q1: a" in out
    sidecar = tmp_path / "cases.not-relevant.jsonl"
    assert json.loads(sidecar.read_text()) == {"case": "q1", "card": "a", "sha": manifest["a"].sha, "at": "t"}
    assert json.loads(cases.read_text())["gold"] == ["g"]
    labels.write_text(json.dumps({"case": "q1", "card": "a", "grade": 1, "sha": manifest["a"].sha}) + "\n")
    args = ["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)]
    code, _, err = run_cli(args, capsys)  # the sidecar holds grade 0 for this very content: a conflict
    assert code == 2 and "labels.jsonl:1: q1 a: grade 1 here, the golden set holds grade 0" in err
    code, out, _ = run_cli([*args, "--prefer", "new"], capsys)
    assert code == 0 and "added q1: a (grade 1)" in out and json.loads(cases.read_text())["gold"] == ["g", "a"]
    assert sidecar.read_text() == ""  # the pair judged again is no longer kept as not relevant


def test_label_apply_sets_aside_a_card_edited_since_it_was_judged_beside_the_labels(tmp_path, capsys):
    kb, cases, _ = _files(tmp_path)
    before = cases.read_bytes()
    labels = write_lines(tmp_path / "labels.jsonl", json.dumps({"case": "q1", "card": "a", "grade": 1, "sha": "0"}))
    code, out, err = run_cli(["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)], capsys)
    assert code == 0, err
    assert "labels.jsonl:1: set aside: card 'a' of q1 changed since it was judged" in out
    assert "set aside as stale: 1" in out
    assert cases.read_bytes() == before and not (tmp_path / "cases.not-relevant.jsonl").exists()
    stale = json.loads((tmp_path / "stale.jsonl").read_text())
    assert (stale["case_id"], stale["card_id"], stale["judged_sha"]) == ("q1", "a", "0")


@pytest.mark.parametrize("line", ['{"case": "q1"}', "not json", '{"case": "q1", "card": "a", "grade": -1, "sha": "x"}'])
def test_label_apply_reports_a_bad_labels_line_as_file_and_line(tmp_path, capsys, line):
    kb, cases, _ = _files(tmp_path)
    labels = write_lines(tmp_path / "labels.jsonl", line)
    code, _, err = run_cli(["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)], capsys)
    assert code == 2 and "labels.jsonl:1:" in err and "Traceback" not in err


def test_judged_at_k_per_slice_counts_gold_of_any_grade_and_kept_not_relevant_cards():
    from retrieval_gate.audit.label_review import judged_at_k
    from retrieval_gate.models import Case

    cases = [Case(id="a", query="q", gold=["g"], locale="en"),
             Case(id="b", query="q", gold={"h": 2, "z": 0}, locale="pt"),
             Case(id="c", query="q", gold=[], locale="pt")]  # no gold: not counted
    retrieved = {"a": ["x", "g", "y", "w"], "b": ["z", "h", "v"], "c": ["x"]}
    rows = judged_at_k(cases=cases, retrieved=retrieved, k=3, not_relevant={"a": {"y"}})
    # a: top 3 = x g y, judged g and y (kept not relevant) → 2/3; b: z (grade 0) and h judged → 2/3
    assert [(r.slice, r.judged, r.n) for r in rows] == [
        ("overall", round(2 / 3, 6), 2), ("kind=golden", round(2 / 3, 6), 2), ("locale=en", round(2 / 3, 6), 1),
        ("locale=pt", round(2 / 3, 6), 1)]
    without = {r.slice: r.judged for r in judged_at_k(cases=cases, retrieved=retrieved, k=3, not_relevant={})}
    assert without["locale=en"] == round(1 / 3, 6) and without["overall"] == round((1 / 3 + 2 / 3) / 2, 6)


def test_label_queue_lists_the_cards_to_label_and_leaves_out_a_pair_kept_not_relevant(tmp_path, capsys):
    from tests.golden import scenarios as sc

    kb = write_lines(tmp_path / "kb.jsonl", '{"id": "g", "text": "gold text"}',
                     '{"id": "a", "title": "Card A", "text": "about   a\\n thing"}', '{"id": "b", "text": "bee"}')
    cases = write_lines(tmp_path / "cases.jsonl", '{"id": "q1", "query": "how?", "gold": ["g"]}')
    comparison = tmp_path / "comparison.json"
    comparison.write_text(sc.regression().comparison.model_copy(
        update={"changed_cases": [_change("unjudged")]}).model_dump_json(), encoding="utf-8")
    out = tmp_path / "queue.jsonl"
    args = ["label", "queue", "--comparison", str(comparison), "--cases", str(cases), "--kb", str(kb)]
    code, text, _ = run_cli([*args, "--out", str(out)], capsys)
    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 0 and "2 cards to label" in text
    assert [(i["card"], i["rank"], i["title"], i["snippet"]) for i in items] == [
        ("a", 1, "Card A", "about a thing"), ("b", 2, "", "bee")]
    (tmp_path / "cases.not-relevant.jsonl").write_text(
        json.dumps({"case": "q1", "card": "a", "sha": items[0]["sha"], "at": "t"}) + "\n")
    code, text, _ = run_cli(args, capsys)
    assert code == 0 and "1 card to label" in text and "q1 · b" in text and "q1 · a" not in text


def test_a_graded_suite_gets_a_grade_choice_per_card_and_the_report_carries_each_cards_hash():
    from retrieval_gate.compare.label_queue import QueueItem
    from retrieval_gate.render.html import render_html
    from tests.golden import scenarios as sc

    scenario = sc.regression()
    change = scenario.comparison.changed_cases[0]
    graded = scenario.results.model_copy(update={"cases": [
        c.model_copy(update={"grades": {g: 3 for g in c.gold}}) if c.id == change.id else c
        for c in scenario.results.cases]})
    queue = [QueueItem(case=change.id, query="q", card="x-card", rank=1, title="X", snippet="text", sha="abcd")]
    html = render_html(results=graded, comparison=scenario.comparison, baseline=scenario.baseline, queue=queue)
    assert f'data-case="{change.id}" data-card="x-card" data-sha="abcd"' in html
    assert html.count('<option value="3">grade 3</option>') == 1 and '<option value="4">' not in html
    assert 'id="download-labels" disabled' in html
    plain = render_html(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline,
                        queue=queue)
    assert "grade 1</option>" not in plain and 'data-grade="1"' in plain  # binary: relevant / not relevant only
