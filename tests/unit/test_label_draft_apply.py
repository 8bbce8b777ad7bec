"""``label apply --draft`` on a hand-made draft (no model needed): new cases in the golden set's
own format, no-answer cases, the sidecar, the refusals (exit 2, nothing written), two labellers;
and ``label apply`` hardened against hostile input (ids in qrels lines, links out of the
repository, a BOM, newlines in output)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.kb import load_kb
from retrieval_gate.score.kb_manifest import kb_manifest
from tests.helpers import run_cli, write_lines

HOSTILE = "c-refund\t1\nq2\tc-bad\t3\n#"


def _setup(root: Path, *, cards: tuple[str, ...] = ("a", "b", "c")) -> tuple[Path, Path, dict[str, str]]:
    (root / ".git").mkdir(parents=True)  # the repository's root
    kb = write_lines(
        root / "kb.jsonl", *(json.dumps({"id": c, "title": f"T {c}", "text": f"text of {c}"}) for c in cards)
    )
    sha = {c: m.sha for c, m in kb_manifest(load_kb(kb).cards).items()}
    pool = {
        "depth": 10,
        "systems": ["bm25", "dense"],
        "found": {"a": ["dense"], "b": ["bm25", "dense"], cards[2]: ["bm25"]},
    }
    lines = [
        json.dumps(
            {
                "id": f"log-{i}",
                "query": f"query {i}",
                "intent": "billing" if i < 2 else "account",
                "count": 3,
                "fields": {"locale": "en"},
                "log": "log.txt",
                "detect": 0.05,
                "pool": pool,
                "candidates": [{"card": c, "sha": sha[c]} for c in cards],
            }
        )
        for i in range(3)
    ]
    draft = write_lines(root / "draft" / "draft.jsonl", *lines)
    return kb, draft, sha


def _labels(path: Path, *records: dict) -> Path:
    return write_lines(path, *(json.dumps(r) for r in records))


def test_labels_become_cases_no_answer_cases_and_sidecar_entries_that_validate(tmp_path, capsys):
    kb, draft, sha = _setup(tmp_path)
    labels = _labels(
        tmp_path / "labels.jsonl",
        {"case": "log-0", "card": "b", "grade": 1, "sha": sha["b"], "at": "t", "labeller": "ann"},
        {"case": "log-0", "card": "a", "grade": 0, "sha": sha["a"], "at": "t"},
        {"case": "log-1", "no_answer": True},
    )
    cases = tmp_path / "golden" / "cases.jsonl"
    code, out, err = run_cli(
        ["label", "apply", str(labels), "--draft", str(draft), "--cases", str(cases), "--kb", str(kb)], capsys
    )
    assert code == 0, err
    loaded = {c.id: c for c in load_cases(cases).cases}
    assert set(loaded) == {"log-0", "log-1"}  # log-2: nobody judged it
    assert loaded["log-0"].gold == ("b",) and loaded["log-1"].gold == ()
    assert loaded["log-0"].tags == {"intent": "billing"} and loaded["log-0"].locale == "en"
    first = json.loads(cases.read_text().splitlines()[0])
    assert first["source"]["labeller"] == "ann" and first["source"]["pool_systems"] == ["bm25", "dense"]
    assert json.loads((tmp_path / "golden" / "cases.not-relevant.jsonl").read_text())["card"] == "a"
    assert "1 drafted queries not labelled yet" in out
    assert "bm25: found 1 of 1 relevant cards, 0 that no other system found" in out
    code, out, _ = run_cli(["validate", "--cases", str(cases), "--kb", str(kb)], capsys)
    assert code == 0 and "ok: 2 cases" in out


def test_an_unknown_id_or_a_card_outside_the_pool_refuses_the_whole_file(tmp_path, capsys):
    kb, draft, sha = _setup(tmp_path)
    cases = write_lines(tmp_path / "cases.jsonl", '{"id": "old", "query": "q", "gold": ["a"]}')
    before = cases.read_bytes()
    labels = _labels(
        tmp_path / "labels.jsonl",
        {"case": "log-0", "card": "b", "grade": 1, "sha": sha["b"]},
        {"case": "nope", "card": "b", "grade": 1, "sha": sha["b"]},
        {"case": "log-0", "card": "zz", "grade": 1, "sha": "1"},
        {"case": "log-1", "card": "c", "grade": 1, "sha": "0000"},
    )
    code, _, err = run_cli(
        ["label", "apply", str(labels), "--draft", str(draft), "--cases", str(cases), "--kb", str(kb)], capsys
    )
    assert code == 2
    assert "labels.jsonl:2: case 'nope' is not in the draft" in err
    assert "labels.jsonl:3: card 'zz' is not in the pool of 'log-0'" in err
    assert "labels.jsonl:4" not in err  # a stale hash is set aside, not refused (tests/integration)
    assert cases.read_bytes() == before and not (tmp_path / "cases.not-relevant.jsonl").exists()


def test_a_beir_golden_set_gets_queries_and_qrels_lines(tmp_path, capsys):
    kb, draft, sha = _setup(tmp_path)
    beir = tmp_path / "beir"
    write_lines(beir / "queries.jsonl", '{"_id": "q0", "text": "old"}')
    write_lines(beir / "qrels.tsv", "query-id\tcorpus-id\tscore", "q0\ta\t2")  # graded: 0-3
    labels = _labels(tmp_path / "l.jsonl", {"case": "log-2", "card": "c", "grade": 2, "sha": sha["c"]})
    code, _, err = run_cli(
        ["label", "apply", str(labels), "--draft", str(draft), "--cases", str(beir), "--kb", str(kb)], capsys
    )
    assert code == 0, err
    assert (beir / "qrels.tsv").read_text().splitlines()[-1] == "log-2\tc\t2"
    assert {c.id: c.grades for c in load_cases(beir).cases}["log-2"] == {"c": 2}


def test_two_labellers_that_disagree_write_nothing_until_a_preference_settles_it(tmp_path, capsys):
    kb, draft, sha = _setup(tmp_path)
    a = _labels(tmp_path / "a.jsonl", {"case": "log-0", "card": "b", "grade": 1, "sha": sha["b"]})
    b = _labels(tmp_path / "b.jsonl", {"case": "log-0", "card": "b", "grade": 0, "sha": sha["b"]})
    cases = tmp_path / "cases.jsonl"
    args = ["label", "apply", str(a), str(b), "--draft", str(draft), "--cases", str(cases), "--kb", str(kb)]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "a.jsonl:1: log-0 b: the labellers disagree (grades 1 vs 0)" in err and not cases.exists()
    code, out, _ = run_cli(["label", "agree", str(a), str(b), "--draft", str(draft)], capsys)
    assert code == 0 and "1 pairs judged by both; Cohen's kappa" in out and "log-0 b: 1 vs 0" in out
    code, _, err = run_cli([*args, "--prefer", "B"], capsys)
    assert code == 0, err
    assert not cases.exists() or "log-0" not in cases.read_text()  # B: not relevant → the sidecar only
    assert json.loads((tmp_path / "cases.not-relevant.jsonl").read_text())["case"] == "log-0"


def test_a_card_id_with_a_tab_and_a_newline_is_refused_for_a_qrels_file(tmp_path, capsys):
    kb = write_lines(tmp_path / "kb.jsonl", json.dumps({"id": HOSTILE, "text": "x"}), '{"id": "g", "text": "y"}')
    qrels = write_lines(tmp_path / "qrels.tsv", "q1\tg\t1")
    before = qrels.read_bytes()
    sha = kb_manifest(load_kb(kb).cards)[HOSTILE].sha
    labels = _labels(tmp_path / "labels.jsonl", {"case": "q1", "card": HOSTILE, "grade": 1, "sha": sha})
    code, _, err = run_cli(["label", "apply", str(labels), "--cases", str(qrels), "--kb", str(kb)], capsys)
    assert code == 2 and "labels.jsonl:1:" in err and "whitespace or a control character" in err
    assert qrels.read_bytes() == before


def test_a_newline_in_an_id_is_shown_escaped_in_the_output(tmp_path, capsys):
    kb = write_lines(tmp_path / "kb.jsonl", json.dumps({"id": HOSTILE, "text": "x"}), '{"id": "g", "text": "y"}')
    cases = write_lines(tmp_path / "cases.jsonl", '{"id": "q1", "query": "how?", "gold": ["g"]}')
    sha = kb_manifest(load_kb(kb).cards)[HOSTILE].sha
    labels = _labels(tmp_path / "labels.jsonl", {"case": "q1", "card": HOSTILE, "grade": 1, "sha": sha})
    code, out, _ = run_cli(["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)], capsys)
    assert code == 0 and "\\x0aq2" in out and "\\x0a# (grade 1)" in out
    assert not any(line.startswith("q2") for line in out.splitlines())
    assert load_cases(cases).cases[0].gold == ("g", HOSTILE)


def test_a_sidecar_linked_out_of_the_repository_is_refused(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    kb = write_lines(repo / "kb.jsonl", '{"id": "g", "text": "y"}', '{"id": "a", "text": "z"}')
    cases = write_lines(repo / "cases.jsonl", '{"id": "q1", "query": "how?", "gold": ["g"]}')
    outside = write_lines(tmp_path / "outside" / "victim.jsonl", '{"case": "x", "card": "y", "sha": "z"}')
    os.symlink(os.path.relpath(outside, repo), repo / "cases.not-relevant.jsonl")
    sha = kb_manifest(load_kb(kb).cards)["a"].sha
    labels = _labels(tmp_path / "labels.jsonl", {"case": "q1", "card": "a", "grade": 0, "sha": sha})
    code, _, err = run_cli(["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)], capsys)
    assert code == 2 and "outside the repository" in err
    assert outside.read_text() == '{"case": "x", "card": "y", "sha": "z"}\n'


def test_a_cases_file_with_a_bom_gets_the_decision_really_written(tmp_path, capsys):
    kb = write_lines(tmp_path / "kb.jsonl", '{"id": "g", "text": "y"}', '{"id": "a", "text": "z"}')
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(b'\xef\xbb\xbf{"id": "q1", "query": "how?", "gold": ["g"]}\n')
    sha = kb_manifest(load_kb(kb).cards)["a"].sha
    labels = _labels(tmp_path / "labels.jsonl", {"case": "q1", "card": "a", "grade": 1, "sha": sha})
    code, out, err = run_cli(["label", "apply", str(labels), "--cases", str(cases), "--kb", str(kb)], capsys)
    assert code == 0, err
    assert "1 added" in out and load_cases(cases).cases[0].gold == ("g", "a")
    assert cases.read_bytes().startswith(b"\xef\xbb\xbf")
