"""Runs to score: TREC run files (ordered as trec_eval orders them) and JSONL rankings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.load.runs import load_run
from tests import helpers


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def problems_of(path: Path) -> list[tuple[int | None, str]]:
    return [(p.line, p.message) for p in helpers.problems_of(load_run, path)]


def test_trec_run_is_ordered_by_score_then_docid_descending(tmp_path: Path) -> None:
    """trec_eval ignores the rank column: score descending, ties broken by docid descending
    (string order, so d9 > d10)."""
    path = write(tmp_path / "run.trec", (
        "q1 Q0 d10 1 2.0 tag\n"
        "q1 Q0 d9 2 2.0 tag\n"
        "q1 Q0 a 3 3.5 tag\n"
        "q1\tQ0\tz\t4\t-1e3\ttag\n"
        "q2 Q0 x 1 1 tag\n"
    ))
    run = load_run(path)
    assert run.format == "trec" and set(run.rankings) == {"q1", "q2"}
    assert run.rankings["q1"].ids == ("a", "d9", "d10", "z")
    assert run.rankings["q1"].scores == (3.5, 2.0, 2.0, -1000.0)
    assert run.rankings["q2"].ids == ("x",)


def test_trec_problems(tmp_path: Path) -> None:
    path = write(tmp_path / "run.trec", (
        b"q1 Q0 d1 1 1.0 t\n"
        b"q1 Q0 d2 2 1.0\n"          # 2: five columns
        b"q1 Q0 d3 x 1.0 t\n"        # 3: rank not an integer
        b"q1 Q0 d4 4 high t\n"       # 4: score not a number
        b"q1 Q0 d5 5 nan t\n"        # 5: NaN
        b"q1 Q0 d\xff 6 1.0 t\n"     # 6: invalid UTF-8
    ))
    problems = problems_of(path)
    assert [line for line, _ in problems] == [2, 3, 4, 5, 6]
    assert "expected 6 columns" in problems[0][1]
    assert "rank 'x' must be an integer" in problems[1][1]
    assert "score 'high'" in problems[2][1]
    assert "not a finite number" in problems[3][1]
    assert "invalid UTF-8" in problems[4][1]


def test_jsonl_run(tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", "\n".join([
        json.dumps({"id": "c1", "retrieved": ["a", "b", "a"], "scores": [0.9, 0.5, 0.1], "latency_ms": 12}),
        json.dumps({"qid": 2, "retrieved": [10, "x"]}),
        json.dumps({"id": "c3", "retrieved": [], "error": "timeout"}),
    ]) + "\n")
    run = load_run(path)
    assert run.format == "jsonl" and len(run.sha256) == 64
    c1, c2, c3 = run.rankings["c1"], run.rankings["2"], run.rankings["c3"]
    assert c1.ids == ("a", "b", "a") and c1.scores == (0.9, 0.5, 0.1) and c1.latency_ms == 12.0
    assert c2.ids == ("10", "x") and c2.scores is None
    assert c3.error == "timeout"


def test_jsonl_problems(tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", "\n".join([
        '{"id": "ok", "retrieved": ["a"]}',
        '{"id": "r", "retrieved": "a"}',                         # 2
        '{"id": "s", "retrieved": ["a", "b"], "scores": [1]}',   # 3
        '{"id": "e", "retrieved": [], "error": 5}',              # 4
        '{"id": "u", "retrieved": [], "foo": 1}',                # 5
        '{"id": "l", "latency_ms": "slow"}',                     # 6
        '{"retrieved": ["a"]}',                                  # 7
        '{"id": "ok", "retrieved": []}',                         # 8
        '{"id": "j", ',                                          # 9
        '{"id": "b", "retrieved": [], "scores": [true]}',        # 10 (scores length 0 vs [true])
    ]) + "\n")
    problems = problems_of(path)
    assert [line for line, _ in problems] == list(range(2, 11))
    text = dict(problems)
    assert "'retrieved' must be a list of ids" in text[2]
    assert "'scores' must be a list of numbers, one per id" in text[3]
    assert "'error' must be a string" in text[4]
    assert "unknown field 'foo'" in text[5]
    assert "'latency_ms' must be a number" in text[6]
    assert "missing or invalid 'id'" in text[7]
    assert "duplicate id 'ok' (first at line 1)" in text[8]
    assert "JSON syntax error" in text[9]


@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_empty_run(tmp_path: Path, content: bytes) -> None:
    assert problems_of(write(tmp_path / "run.trec", content)) == [(None, "run is empty")]


def test_missing_run(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "nope.trec") == [(None, "file not found")]
