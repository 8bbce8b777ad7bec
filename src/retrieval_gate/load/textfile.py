"""Reading user files line by line, collecting every problem instead of stopping at the first."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import ReadRefused, read_bounded
from retrieval_gate.load import boundary
from retrieval_gate.load.fastpath import decoded_text, text_lines


def display(path: Path) -> str:
    """How a path is named in messages: as the user gave it."""
    return str(path)


def read_bytes(path: Path) -> bytes:
    """Read a whole file once (``files.read_bounded``: a pipe or ``<(…)`` works like a file), at
    most ``boundary.MAX_FILE_BYTES``, or raise a one-line InputError naming it."""
    try:
        return read_bounded(path, max_bytes=boundary.MAX_FILE_BYTES)
    except ReadRefused as exc:
        reason = f"file is {exc.reason}" if exc.reason.startswith("larger") else exc.reason
        raise InputError(Problem(display(path), None, reason)) from None


def iter_lines(path: Path, problems: list[Problem], *, data: bytes | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line; undecodable or oversized lines
    become problems. ``data``: the file's bytes when the caller already read them (read once)."""
    data = read_bytes(path) if data is None else data
    text = decoded_text(data) if len(data) <= boundary.MAX_LINE_BYTES else None
    if text is not None:  # the whole file decodes and no line can be too long: no per-line work
        yield from text_lines(text)
        return
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            continue
        if len(raw) > boundary.MAX_LINE_BYTES:
            problems.append(Problem(display(path), number,
                                    f"line is longer than {boundary.MAX_LINE_BYTES:,} bytes"))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(
                Problem(display(path), number, f"invalid UTF-8 (byte {exc.start + 1} of the line)")
            )
            continue
        yield number, text


def iter_json_objects(path: Path, problems: list[Problem], *,
                      data: bytes | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSONL line that parses to an object within the
    input boundary's limits (``load.boundary``)."""
    for number, text in iter_lines(path, problems, data=data):
        try:
            value = boundary.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(display(path), number, f"JSON syntax error: {exc.msg} (column {exc.colno})")
            )
            continue
        except boundary.JsonRefused as exc:
            problems.append(Problem(display(path), number, exc.message))
            continue
        if not isinstance(value, dict):
            problems.append(
                Problem(display(path), number, f"expected a JSON object, got {type(value).__name__}")
            )
            continue
        yield number, value


Record = TypeVar("Record", bound=BaseModel)


def validated_records(
    path: Path, problems: list[Problem], *, model: type[Record], what: str,
    prepare: Callable[[dict[str, Any], int], dict[str, Any] | Problem], empty: str,
    data: bytes | None = None,
) -> tuple[list[Record], dict[str, int]]:
    """Each JSONL object of ``path``, ``prepare``d and validated into ``model``, in file order,
    with the line of each id. A line that does not validate, or repeats an earlier id, becomes a
    problem (``duplicate <what> id``) and is left out; a file with no record and no other problem
    gets the problem ``empty``."""
    records: list[Record] = []
    lines: dict[str, int] = {}
    for number, obj in iter_json_objects(path, problems, data=data):
        if len(records) >= boundary.MAX_RECORDS:
            problems.append(Problem(display(path), number, f"more than {boundary.MAX_RECORDS:,} {what}s"))
            break
        prepared = prepare(dict(obj), number)
        if isinstance(prepared, Problem):
            problems.append(prepared)
            continue
        try:
            record = model.model_validate(prepared)
        except ValidationError as exc:
            problems.extend(validation_problems(path, number, exc))
            continue
        record_id = record.id  # type: ignore[attr-defined]
        too_long = boundary.id_problem(record_id, what=f"{what} id")
        if too_long is not None:
            problems.append(Problem(display(path), number, too_long))
            continue
        if record_id in lines:
            first = lines[record_id]
            problems.append(Problem(display(path), number,
                                    f"duplicate {what} id {boundary.quote(record_id)} (first at line {first})"))
            continue
        lines[record_id] = number
        records.append(record)
    if not records and not problems:
        problems.append(Problem(display(path), None, empty))
    return records, lines


def validation_problems(path: Path, line: int, exc: ValidationError) -> list[Problem]:
    """Turn a pydantic ValidationError into one readable problem per field."""
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden":
            message = f"unknown field {boundary.quote(loc)}"
        elif kind == "missing":
            message = f"missing required field {boundary.quote(loc)}"
        else:
            msg = err["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            message = f"field {boundary.quote(loc)}: {msg}" if loc else msg
        out.append(Problem(display(path), line, message))
    return out


def raise_if(problems: list[Problem]) -> None:
    if problems:
        raise InputError(sorted(set(problems), key=lambda p: (p.path, p.line or 0, p.message)))
