"""A query log (``retrieval-gate cases draft --queries LOG``): a text file (one query a line), JSONL
or CSV/TSV with a query column and optional ``count``, ``intent``, ``locale`` and other columns
— what a search box's log or an analytics table exports.

Read as a stream (a million-line log is never held as lines): each row becomes a
``golden.log_clean.RawQuery``. A line that does not decode as UTF-8 is passed on as text with the
replacement character, which cleaning drops as "not text". Structural problems (a JSONL line
that is no object, a row without the query column, a count that is no positive integer) are
reported as ``file:line`` and nothing is drafted; what a message quotes from the log (a header's
column names, a count) is masked first and cut short (``shown``). Every other column is passed on as text (a
value that is no string or number as ``""``): which columns travel is ``golden.log_clean``'s
allow-list, which counts the columns it drops.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.golden.masking import mask_text
from retrieval_gate.load.textfile import display

MAX_PROBLEMS = 50
MAX_SHOWN_CHARS = 80
MAX_QUOTED_CHARS = 1000  # a longer piece of the log is named by its length, not quoted


def shown(value: object) -> str:
    """A piece of the log quoted in a message: masked (``golden.masking``), then cut to
    ``MAX_SHOWN_CHARS`` — a header cell or a count may hold a key; one over
    ``MAX_QUOTED_CHARS`` is not quoted (masking a megabyte for a message is not worth it)."""
    text = str(value)
    if len(text) > MAX_QUOTED_CHARS:
        return f"(a value of {len(text):,} characters)"
    text = mask_text(text)[0]
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1] + "…"


def log_format(path: Path) -> str:
    """``jsonl``, ``csv``, ``tsv`` or ``text``, from the file's suffix."""
    suffix = path.suffix.lower()
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv"}.get(suffix, "text")


def iter_log(path: Path, *, query_column: str = "query",
             problems: list[Problem]) -> Iterator[tuple[int, str, int, dict[str, str]]]:
    """``(line, text, count, fields)`` per row; problems appended (at most ``MAX_PROBLEMS``)."""
    if not path.is_file():
        raise InputError(Problem(display(path), None, "query log not found"))
    fmt = log_format(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(3)
            if head != b"\xef\xbb\xbf":
                handle.seek(0)
            stream = io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline="")
            if fmt == "text":
                for number, line in enumerate(stream, start=1):
                    yield number, line, 1, {}
            elif fmt == "jsonl":
                yield from _jsonl(path, stream, query_column=query_column, problems=problems)
            else:
                yield from _table(path, stream, query_column=query_column, problems=problems,
                                  delimiter="," if fmt == "csv" else "\t")
    except OSError as exc:
        raise InputError(Problem(display(path), None, f"cannot read: {exc.strerror}")) from None


def _row(path: Path, number: int, obj: dict[str, Any], *, query_column: str,
         problems: list[Problem]) -> tuple[int, str, int, dict[str, str]] | None:
    text = obj.get(query_column)
    if not isinstance(text, str):
        problems.append(Problem(display(path), number, f"no {query_column!r} text (give --query-column)"))
        return None
    count: Any = obj.get("count", 1)
    if count in (None, ""):
        count = 1
    try:
        count = int(count) if not isinstance(count, bool) and float(count) == int(float(count)) else 0
    except (TypeError, ValueError, OverflowError):
        count = 0
    if count < 1:
        problems.append(Problem(display(path), number, f"count {shown(repr(obj.get('count')))}: "
                                                       "expected a positive integer"))
        return None
    fields = {str(k): str(v) if isinstance(v, str | int | float) and not isinstance(v, bool) else ""
              for k, v in obj.items() if k not in (query_column, "count")}
    return number, text, count, fields


def _jsonl(path: Path, stream: io.TextIOWrapper, *, query_column: str,
           problems: list[Problem]) -> Iterator[tuple[int, str, int, dict[str, str]]]:
    for number, line in enumerate(stream, start=1):
        if not line.strip() or len(problems) >= MAX_PROBLEMS:
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            problems.append(Problem(display(path), number, f"JSON syntax error: {getattr(exc, 'msg', exc)}"))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(display(path), number, f"expected a JSON object, got {type(obj).__name__}"))
            continue
        if (row := _row(path, number, obj, query_column=query_column, problems=problems)) is not None:
            yield row


def _table(path: Path, stream: io.TextIOWrapper, *, query_column: str, problems: list[Problem],
           delimiter: str) -> Iterator[tuple[int, str, int, dict[str, str]]]:
    reader = csv.DictReader(stream, delimiter=delimiter)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError(Problem(display(path), 1, f"CSV: {exc}")) from None
    if query_column not in header:
        named = ", ".join(shown(h) for h in header[:10]) or "empty"
        raise InputError(Problem(display(path), 1, f"no {query_column!r} column in the header ({named}): "
                                                   "give --query-column"))
    try:
        for obj in reader:
            if len(problems) >= MAX_PROBLEMS:
                break
            row = _row(path, reader.line_num, {k: v for k, v in obj.items() if isinstance(k, str)},
                       query_column=query_column, problems=problems)
            if row is not None:
                yield row
    except csv.Error as exc:
        problems.append(Problem(display(path), reader.line_num, f"CSV: {exc}"))
