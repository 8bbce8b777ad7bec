"""The readers that stream (docs/performance.md, "Memory of large inputs"): ``textfile.stream_lines``
yields what ``iter_lines`` yields, problems and all, one line in memory at a time; ``validate``'s
check of a JSONL golden set and a labels file's read hold the ids and records, never the file's
bytes and text; ``cases draft``'s cleaning keeps a digest per distinct dropped line, not the line;
``label apply`` writes the "not relevant" sidecar a piece at a time and holds each pair once.
Memory is measured with ``tracemalloc`` (what Python allocates, deterministic), against the
input's size."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import write_chunks_atomic
from retrieval_gate.golden.label_apply import apply_labels
from retrieval_gate.golden.labels_file import read_decisions
from retrieval_gate.golden.log_clean import RawQuery, clean_log
from retrieval_gate.load import boundary, textfile
from retrieval_gate.load.dataset import check_dataset, load_dataset, missing_gold_ids
from retrieval_gate.load.kb import load_kb
from retrieval_gate.score.kb_manifest import kb_manifest


def _peak(call: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("data", [
    b"\xef\xbb\xbf{\"a\": 1}\r\n\r\n  \n{\"b\": 2}",  # a BOM, CRLF, blank lines, no final newline
    b"one\n\xff\xfe bad\nthree\r\r\n",  # an undecodable line among good ones
    b"short\n" + b"x" * 40 + b"\nafter\n" + b"y" * 41,  # lines over the (lowered) limit, the last one unended
    b"",
])
def test_stream_lines_yields_what_iter_lines_yields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     data: bytes) -> None:
    monkeypatch.setattr(boundary, "MAX_LINE_BYTES", 39)
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    whole: list[Problem] = []
    streamed: list[Problem] = []
    assert list(textfile.stream_lines(path, streamed)) == list(textfile.iter_lines(path, whole))
    assert streamed == whole


def _world(root: Path, *, cases: int, query_chars: int) -> tuple[Path, Path]:
    kb = root / "kb.jsonl"
    kb.write_text("".join(json.dumps({"id": f"card-{i}", "text": f"card {i} text"}) + "\n" for i in range(20)),
                  encoding="utf-8")
    path = root / "cases.jsonl"
    gold = lambda i: [f"card-{i % 20}"] if i % 7 else [f"gone-{i}"]  # noqa: E731 - every 7th names no card
    path.write_text("".join(json.dumps({"id": f"c{i}", "query": f"q{i} " + "w" * query_chars, "gold": gold(i)})
                            + "\n" for i in range(cases)), encoding="utf-8")
    return kb, path


def test_validate_s_check_reports_what_the_loader_reports_and_holds_no_case(tmp_path: Path) -> None:
    kb, cases = _world(tmp_path, cases=4000, query_chars=1000)  # ~4 MB of cases
    size = cases.stat().st_size
    checked, peak = _peak(lambda: check_dataset(cases=cases, kb=kb, missing_gold="score"))
    case_set, loaded_kb = load_dataset(cases=cases, kb=kb, missing_gold="score")
    assert (checked.cases, checked.with_gold, checked.cards) == (4000, 4000, 20)
    assert checked.missing == missing_gold_ids(cases=case_set, kb=loaded_kb)
    assert peak < size / 2, (peak, size)  # the loader held the file's bytes, its text and every case


def test_a_labels_file_shares_its_repeated_texts(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    rows = [{"case": f"c{i // 50}", "card": f"card-{i % 50}", "grade": int(i % 50 == 0), "sha": f"sha-{i % 50}",
             "at": "2026-12-07T08:00:00.000Z", "labeller": "ana"} for i in range(20_000)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    records, peak = _peak(lambda: read_decisions(path))
    assert [(r.case, r.card, r.grade, r.sha) for _, r in records] == [
        (x["case"], x["card"], x["grade"], x["sha"]) for x in rows]
    assert records[0][1].card is records[50][1].card and records[0][1].at is records[1][1].at
    assert records[0][1].model_copy(update={"grade": 3}).grade == 3 and records[0][1].grade == 1
    assert peak < 3 * path.stat().st_size, (peak, path.stat().st_size)  # 1.6 ×; it was 14.5 ×


def test_cases_draft_keeps_no_dropped_line_whole() -> None:
    rows = (RawQuery(line=i, text=f"{i} " + "refund my card " * 7000) for i in range(150))  # 150 × ~105 KB
    (kept, report), peak = _peak(lambda: clean_log(rows))
    assert kept == [] and report.too_long == 150 and report.dropped["over 500 characters"] == 150
    assert peak < 5_000_000, peak  # a few lines and the masker, never the 15 MB of dropped text


def test_label_apply_writes_the_sidecar_as_it_makes_it_and_holds_no_pair_twice(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # label apply writes inside a repository only
    kb = tmp_path / "kb.jsonl"
    kb.write_text("".join(json.dumps({"id": f"card-{i}", "text": f"card {i} text"}) + "\n" for i in range(50)),
                  encoding="utf-8")
    sha = {card: m.sha for card, m in kb_manifest(load_kb(kb).cards).items()}
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "query": f"query {i}", "gold": ["card-49"]}) + "\n"
                             for i in range(400)), encoding="utf-8")
    side = tmp_path / "cases.not-relevant.jsonl"
    side.write_bytes(b'{"case": "c0", "card": "card-1", "sha": "old", "at": ""}\r\n'  # judged again: dropped
                     b'{"case": "zz", "card": "card-2", "sha": "x", "at": ""}')  # kept byte for byte, no newline
    rows = [{"case": f"c{i // 40}", "card": f"card-{i % 40}", "grade": int(i % 40 == 0), "sha": sha[f"card-{i % 40}"],
             "at": "2026-12-07T08:00:00.000Z"} for i in range(16_000)]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows + rows[:100]), encoding="utf-8")  # 100 repeated
    files = [(labels, read_decisions(labels))]
    applied, peak = _peak(lambda: apply_labels(files, draft=None, draft_path=None, kb=kb, cases=cases, prefer=None,
                                               prefer_labeller=None, labeller="", date="2026-12-07"))
    zeros = [r for r in rows if r["grade"] == 0]
    assert side.read_bytes() == (b'{"case": "zz", "card": "card-2", "sha": "x", "at": ""}\n' + "".join(
        json.dumps({"at": r["at"], "card": r["card"], "case": r["case"], "sha": r["sha"]}) + "\n"
        for r in zeros).encode())
    assert json.loads(cases.read_text(encoding="utf-8").splitlines()[3])["gold"] == ["card-49", "card-0"]
    assert applied.already == 0 and len(applied.merge.not_relevant) == len(zeros) == 15_600
    assert peak < 4 * labels.stat().st_size, (peak, labels.stat().st_size)  # 2.4 ×; it was 7.6 ×


def test_a_write_whose_pieces_fail_midway_leaves_the_file_as_it_was_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "cases.not-relevant.jsonl"
    target.write_bytes(b'{"case": "q1"}\n')

    def pieces() -> Iterator[str]:
        yield '{"case": "q2"}\n'
        raise InputError(Problem(str(target), 2, "cannot read: Input/output error"))

    with pytest.raises(InputError):
        write_chunks_atomic(target, chunks=pieces())
    assert target.read_bytes() == b'{"case": "q1"}\n' and sorted(tmp_path.iterdir()) == [target]
    write_chunks_atomic(target, chunks=iter(['{"case": "q2"}\n', '{"case": "q3"}\n']))
    assert target.read_bytes() == b'{"case": "q2"}\n{"case": "q3"}\n'
