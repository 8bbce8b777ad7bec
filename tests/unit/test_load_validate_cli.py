"""``retrieval-gate validate`` (and the loading half of ``score``): every problem, file:line,
exit 2, no traceback; exit 0 on a clean dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli, write_lines


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path / "kb.jsonl",
        json.dumps({"id": "A", "text": "alpha"}),
        json.dumps({"id": "B#1", "text": "beta", "parent_id": "B"}),
        json.dumps({"id": "C", "text": "gamma"}),
    )


def test_clean_dataset_exits_0(tmp_path: Path, kb: Path, capsys) -> None:
    cases = write_lines(tmp_path / "cases.jsonl",
                        json.dumps({"id": "c1", "query": "q", "must_cite_one_of": ["A", "B"]}),
                        json.dumps({"id": "c2", "query": "q", "relevant_doc_ids": []}))
    code, out, err = run_cli(["validate", "--kb", str(kb), "--cases", str(cases)], capsys)
    assert code == 0, err
    assert "ok: 2 cases (1 with gold, 1 no-answer), 3 cards" in out


def test_every_problem_in_both_files_and_every_unresolved_gold_id(tmp_path: Path, kb: Path, capsys) -> None:
    cases = write_lines(
        tmp_path / "cases.jsonl",
        json.dumps({"id": "c1", "query": "q", "gold": ["A"]}),          # 1 fine
        json.dumps({"id": "c1", "query": "q", "gold": ["A"]}),          # 2 duplicate id
        json.dumps({"id": "c2", "query": ""}),                          # 3 empty query
        json.dumps({"id": "c3", "query": "q", "extra": 1}),             # 4 unknown field
        json.dumps({"id": "c4", "query": "q", "gold": [["A"]]}),        # 5 wrong type
        b'{"id": "c5", "query": "\xe9"}',                               # 6 invalid UTF-8
        '{"id": "c6", "query": "q"',                                    # 7 JSON syntax error
        json.dumps({"id": "c7", "query": "q", "gold": ["Z"]}),          # 8 gold id not in the KB
        json.dumps({"id": "c8", "query": "q", "gold": ["B#1"]}),        # 9 gold id that is a chunk
    )
    # a gold id that names no card (line 8) is refused by --strict; without it, a finding (below)
    code, out, err = run_cli(["validate", "--strict", "--kb", str(kb), "--cases", str(cases)], capsys)
    assert code == 2
    assert "Traceback" not in err + out
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert [ln.split(":")[2] for ln in lines] == ["2", "3", "4", "5", "6", "7", "8", "9"]
    assert all(ln.startswith(f"error: {cases}:") for ln in lines)
    assert "gold id 'Z' is not a card" in lines[6]
    assert "gold id 'B#1' is a chunk of card 'B'" in lines[7]
    assert err.rstrip().endswith("8 problems")
    code, out, err = run_cli(["validate", "--kb", str(kb), "--cases", str(cases)], capsys)
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert code == 2 and [ln.split(":")[2] for ln in lines] == ["2", "3", "4", "5", "6", "7", "9"]


def test_kb_problems_are_reported_together_with_case_problems(tmp_path: Path, capsys) -> None:
    kb = write_lines(tmp_path / "kb.jsonl", '{"id": "A", "text": "a"}', '{"id": "A", "text": "dup"}')
    cases = write_lines(tmp_path / "cases.jsonl", '{"id": "c", "query": ""}')
    code, _, err = run_cli(["validate", "--kb", str(kb), "--cases", str(cases)], capsys)
    assert code == 2
    assert f"error: {kb}:2: duplicate card id 'A'" in err
    assert f"error: {cases}:1: field 'query': query is empty" in err


def test_gold_ids_are_checked_against_beir_and_markdown_kbs(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "md"
    folder.mkdir()
    (folder / "refunds.md").write_text("---\nid: refunds\n---\nRefund text.\n")
    cases = write_lines(tmp_path / "cases.jsonl",
                        json.dumps({"id": "c1", "query": "q", "gold": ["refunds"]}),
                        json.dumps({"id": "c2", "query": "q", "gold": ["shipping"]}))
    code, _, err = run_cli(["validate", "--strict", "--kb", str(folder), "--cases", str(cases)], capsys)
    assert code == 2
    assert err.splitlines() == [f"error: {cases}:2: case 'c2': gold id 'shipping' is not a card in {folder}"]


def test_a_gold_id_that_names_no_card_is_a_finding_and_the_baseline_manifest_tells_deleted_from_typo(
        tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    kb = write_lines(tmp_path / "kb.jsonl", json.dumps({"id": "A", "text": "alpha"}))
    cases = write_lines(tmp_path / "cases.jsonl",
                        json.dumps({"id": "c1", "query": "q", "gold": ["A"]}),
                        json.dumps({"id": "c2", "query": "q", "gold": ["gone"]}),
                        json.dumps({"id": "c3", "query": "q", "gold": ["tpyo"]}))
    code, out, _ = run_cli(["validate", "--kb", "kb.jsonl", "--cases", "cases.jsonl"], capsys)
    assert code == 0 and "2 gold ids name no card (findings above; --strict refuses them)" in out
    assert "finding: cases.jsonl:2: case 'c2': gold id 'gone' is not a card in kb.jsonl: deleted, or never" in out
    # the baseline's KB manifest (baselines/default.kb.json) had 'gone': deleted since; never 'tpyo'
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "default.json").write_text("{}", encoding="utf-8")
    (tmp_path / "baselines" / "default.kb.json").write_text(json.dumps(
        {"schema_version": 1, "cards": {"A": {"sha": "1", "title": ""}, "gone": {"sha": "2", "title": ""}}}),
        encoding="utf-8")
    code, out, _ = run_cli(["validate", "--kb", str(kb), "--cases", str(cases)], capsys)
    assert code == 0
    assert "gold id 'gone' is not a card in" in out and "that this KB deleted: scored as a loss (gold-removed)" in out
    assert "gold id 'tpyo' is not a card in" in out and "never a card (not in the baseline's KB either" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["validate", "--kb", "missing-kb.jsonl", "--cases", "missing-cases.jsonl"], "not found"),
        (["validate", "--kb", "x"], "validate needs --cases (or a suite of retrieval-gate.yml"),
        (["validate", "--nope"], "No such option"),
        (["no-such-command"], "No such command"),
    ],
)
def test_usage_and_missing_files_exit_2(args: list[str], fragment: str, tmp_path: Path, capsys,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(args, capsys)
    assert code == 2
    assert fragment in err and "Traceback" not in err + out


def test_score_reports_dataset_and_integrity_problems_before_reading_the_run(tmp_path: Path, kb: Path,
                                                                             capsys) -> None:
    cases = write_lines(tmp_path / "cases.jsonl", json.dumps({"id": "c1", "query": "q", "gold": ["nope"]}))
    run = write_lines(tmp_path / "run.trec", "c1 Q0 A 1 1.0 t")
    code, _, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--kb", str(kb),
                            "--out", str(tmp_path / "r.json")], capsys)
    # a gold id that names no card is scored as a loss (a deleted card: gold-removed), said on stderr
    assert code == 0, err
    assert f"warning: {cases}:1: case 'c1': gold id 'nope' is not a card in {kb}: scored as a loss" in err
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert written["gold_missing"] == {"c1": ["nope"]} and written["cases"][0]["scores"]["hit@1"] == 0.0
    # a gold id that is a chunk of a card stays a labelling bug: exit 2 before the run is read
    cases = write_lines(tmp_path / "chunk.jsonl", json.dumps({"id": "c1", "query": "q", "gold": ["B#1"]}))
    code, _, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--kb", str(kb),
                            "--out", str(tmp_path / "r2.json")], capsys)
    assert code == 2 and "gold id 'B#1' is a chunk of card 'B'" in err
    assert not (tmp_path / "r2.json").exists()


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--k", "1,x"], "k list"),
        (["--k", "0"], "k must be"),
        (["--metrics", "foo"], "unknown measure"),
        (["--k", "1,3", "--headline-k", "5"], "headline_k 5 is not one of the cutoffs"),
    ],
)
def test_score_bad_options_exit_2(tmp_path: Path, extra: list[str], fragment: str, capsys) -> None:
    cases = write_lines(tmp_path / "cases.jsonl", json.dumps({"id": "c1", "query": "q", "gold": ["A"]}))
    run = write_lines(tmp_path / "run.trec", "c1 Q0 A 1 1.0 t")
    code, _, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--out",
                            str(tmp_path / "r.json"), *extra], capsys)
    assert code == 2 and fragment in err


def test_score_bad_run_lists_every_line(tmp_path: Path, capsys) -> None:
    cases = write_lines(tmp_path / "cases.jsonl", json.dumps({"id": "c1", "query": "q", "gold": ["A"]}))
    run = write_lines(tmp_path / "run.trec", "c1 Q0 A 1 1.0 t", "c1 Q0 B", "c1 Q0 C 3 x t")
    code, _, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--out",
                            str(tmp_path / "r.json")], capsys)
    assert code == 2
    assert f"error: {run}:2: expected 6 columns" in err and f"error: {run}:3: rank '3'" in err
