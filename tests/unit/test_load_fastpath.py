"""The fast readers (load/fastpath.py) give what the line-by-line readers give, and hand every
file they are unsure of to them, so every problem is still named ``file:line``."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.load import runs as runs_module
from retrieval_gate.load import textfile
from retrieval_gate.load.fastpath import fast_trec
from retrieval_gate.load.runs import load_run


def slow_run(path: Path, monkeypatch: pytest.MonkeyPatch):
    """The line-by-line reader alone (the fast path switched off)."""
    with monkeypatch.context() as patch:
        patch.setattr(runs_module, "fast_trec", lambda data: None)
        return load_run(path)


def trec_lines(seed: int, *, ties: bool, shuffled: bool) -> list[str]:
    rng = random.Random(seed)
    rows = []
    for q in range(40):
        docs = [*rng.sample(range(500), 30), 7, 7]  # a repeated doc is kept twice, as trec_eval reads it
        for rank, doc in enumerate(docs, start=1):
            score = rng.choice([1.0, 2.0, 3.0]) if ties else round(rng.uniform(-5, 5), 6)
            rows.append(f"q{q} Q0 d{doc} {rank} {score} tag")
    if shuffled:  # qids interleaved, rows not in score order
        rng.shuffle(rows)
    return rows


@pytest.mark.parametrize(
    ("ties", "shuffled", "newline", "bom", "final_newline"),
    [
        (False, False, "\n", False, True),
        (True, False, "\n", False, True),
        (False, True, "\n", False, False),
        (True, True, "\r\n", True, True),
        (False, False, "\t\n", False, True),
    ],
    ids=["ordered", "tied-scores", "interleaved-no-final-newline", "crlf-bom-ties-interleaved", "trailing-tab"],
)
def test_fast_trec_equals_the_line_by_line_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ties: bool,
                                                  shuffled: bool, newline: str, bom: bool, final_newline: bool) -> None:
    text = newline.join(trec_lines(3, ties=ties, shuffled=shuffled)) + (newline if final_newline else "")
    path = tmp_path / "run.trec"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    assert fast_trec(path.read_bytes()) is not None  # the fast path did read it
    fast, slow = load_run(path), slow_run(path, monkeypatch)
    assert list(fast.rankings) == list(slow.rankings)
    assert fast.rankings == slow.rankings
    assert (fast.sha256, fast.format) == (slow.sha256, slow.format)


def test_fast_trec_orders_as_trec_eval_score_then_docid_descending() -> None:
    data = b"q1 Q0 a 1 1.0 t\nq1 Q0 c 2 2.0 t\nq1 Q0 b 3 1.0 t\nq2 Q0 x 1 0.5 t\nq1 Q0 z 4 -1 t\n"
    got = fast_trec(data)
    assert got is not None
    assert got["q1"].ids == ("c", "b", "a", "z") and got["q1"].scores == (2.0, 1.0, 1.0, -1.0)
    assert got["q2"].ids == ("x",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 0.5\n", "run.trec:2: expected 6 columns (qid Q0 docid rank score tag), got 5"),
        # a 7th column is ignored, as trec_eval ignores it (the slow path reads it)
        ("q1 Q0 a 1 1.0 t x\nq1 Q0 b 2 0.5\n", "run.trec:2: expected 6 columns (qid Q0 docid rank score tag), got 5"),
        ("q1 Q0 a 1.5 1.0 t\n", "run.trec:1: rank '1.5' must be an integer and score '1.0' a number"),
        ("q1 Q0 a 1 high t\n", "run.trec:1: rank '1' must be an integer and score 'high' a number"),
        ("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 nan t\n", "run.trec:2: score 'nan' is not a finite number"),
        ("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 inf t\n", "run.trec:2: score 'inf' is not a finite number"),
        ("q1 Q0 a 1 1.0 t\nq1 Q0 \xff 2 0.5 t\n", "run.trec:2: invalid UTF-8 (byte 7 of the line)"),
    ],
    ids=["five-columns", "seven-columns-balanced-by-five", "float-rank", "word-score", "nan", "inf", "bad-utf8"],
)
def test_a_malformed_run_leaves_the_fast_path_and_is_named_by_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    assert fast_trec(path.read_bytes()) is None
    with pytest.raises(InputError) as info:
        load_run(path)
    assert [str(p).replace(str(tmp_path) + "/", "") for p in info.value.problems] == message.split("|")


def test_blank_lines_inside_a_run_take_the_slow_path_with_the_same_result(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 1.0 t\n\n   \nq1 Q0 b 2 3.0 t\n")
    assert fast_trec(path.read_bytes()) is None
    assert load_run(path).rankings["q1"].ids == ("b", "a")


@pytest.mark.parametrize(
    "data",
    [b"", b"\n\n", b"a\r\n\r\n  b \r\r\n\xef\xbb\xbf", b"\xef\xbb\xbfx\ny", b"\x0c\n\x1c\nz\n", b"no newline"],
    ids=["empty", "blank", "crlf", "bom", "form-feed-and-file-separator", "no-newline"],
)
def test_iter_lines_whole_file_decode_equals_per_line_decode(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    fast = list(textfile.iter_lines(path, []))
    # The per-line reading, by hand: split on \n, drop trailing \r, skip ASCII-blank lines.
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    expected = [(n, raw.rstrip(b"\r").decode()) for n, raw in enumerate(body.split(b"\n"), start=1)
                if raw.rstrip(b"\r").strip()]
    assert fast == expected


@pytest.mark.parametrize("column", ["qid", "docid"])
@pytest.mark.parametrize("length", [1024, 1025])
def test_an_id_over_the_length_limit_leaves_the_fast_path(tmp_path: Path, column: str, length: int) -> None:
    from retrieval_gate.load.boundary import MAX_ID_CHARS

    assert MAX_ID_CHARS == 1024  # the limit these cases sit on either side of
    long_id = "x" * length
    qid, doc = (long_id, "a") if column == "qid" else ("q1", long_id)
    text = f"q0 Q0 b 1 2.0 t\n{qid} Q0 {doc} 1 1.0 t\n"
    within = length <= MAX_ID_CHARS
    assert (fast_trec(text.encode()) is not None) == within
    path = tmp_path / "run.trec"
    path.write_text(text)
    if within:
        assert load_run(path).rankings[qid].ids == (doc,)
    else:
        with pytest.raises(InputError) as info:
            load_run(path)
        assert "run.trec:2" in str(info.value.problems[0]) and "(1,025 characters)" in str(info.value.problems[0])
