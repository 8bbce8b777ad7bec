"""Qrels as trec_eval reads them: grades kept, comments and blank lines skipped, a bare qrels file
as a golden set; TREC runs with extra trailing columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.runs import load_run


@pytest.mark.parametrize("text", [
    "# judged by hand\nq1 0 a 2\n\nq1 0 b 0\n   # indented comment\nq2 0 c -1\nq2 0 d 1\n",
    "query-id\tcorpus-id\tscore\nq1\ta\t2\nq1\tb\t0\nq2\tc\t-1\nq2\td\t1\n",
    "# BEIR with a comment first\nquery-id\tcorpus-id\tscore\nq1\ta\t2\nq1\tb\t0\nq2\tc\t-1\nq2\td\t1\n",
])
def test_a_bare_qrels_file_is_a_golden_set_with_grades(tmp_path: Path, text: str) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text(text)
    case_set = load_cases(path)
    assert case_set.format == "qrels"
    assert [(c.id, c.query, c.gold, c.grades) for c in case_set.cases] == [
        ("q1", "", ("a",), {"a": 2, "b": 0}),
        ("q2", "", ("d",), {"c": -1, "d": 1}),
    ]


@pytest.mark.parametrize("text,message", [
    ("q1 0 a 1\nq1 0 a 2\n", r"qrels.txt:2: query 'q1' judges 'a' again with another grade \(1, then 2\)"),
    ("q1\n", r"qrels.txt:1: expected 3 columns"),
    ("q1 0 a high\n", r"qrels.txt:1: score 'high' is not a number"),
    ("# only a comment\n", r"no judgements"),
])
def test_bad_qrels_lines_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_cases(path)


def test_the_same_judgement_twice_is_not_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 a 1\nq1 0 a 1\n")
    assert load_cases(path).cases[0].grades == {"a": 1}


def test_a_trec_run_ignores_columns_after_the_sixth_but_needs_six(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 a 1 2.0 tag extra more\nq1 Q0 b 2 1.0 tag\n")
    assert load_run(path).rankings["q1"].ids == ("a", "b")
    path.write_text("q1 Q0 a 1 2.0\n")
    with pytest.raises(InputError, match=r"run\.txt:1: expected 6 columns"):
        load_run(path)
