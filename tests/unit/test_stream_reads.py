"""The readers that stream (docs/performance.md, "Memory of large inputs"): ``textfile.stream_lines``
yields what ``iter_lines`` yields, problems and all, one line in memory at a time; ``validate``'s
check of a JSONL golden set and a labels file's read hold the ids and records, never the file's
bytes and text; ``cases draft``'s cleaning keeps a digest per distinct dropped line, not the line.
Memory is measured with ``tracemalloc`` (what Python allocates, deterministic), against the
input's size."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.errors import Problem
from retrieval_gate.golden.labels_file import read_decisions
from retrieval_gate.golden.log_clean import RawQuery, clean_log
from retrieval_gate.load import boundary, textfile
from retrieval_gate.load.dataset import check_dataset, load_dataset, missing_gold_ids


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
