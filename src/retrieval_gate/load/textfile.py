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


def stream_lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """``iter_lines``' line-by-line path over the file as it is read (a pipe works like a file):
    the same lines and problems, with one line in memory at a time instead of the file's bytes
    and text (``validate`` streams a cases file of any size in the memory of its ids). A line is
    read at most ``MAX_LINE_BYTES`` at a time: a longer one is a problem, skipped to its end."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; open errors named as read_bytes names them
    except FileNotFoundError:
        raise InputError(Problem(display(path), None, "file not found")) from None
    except IsADirectoryError:
        raise InputError(Problem(display(path), None, "is a directory, expected a file")) from None
    except OSError as exc:
        raise InputError(Problem(display(path), None, f"cannot read: {exc.strerror}")) from None
    limit, total = boundary.MAX_LINE_BYTES, 0
    with handle:
        number = 0
        while True:
            try:
                raw = handle.readline(limit + 3)  # a longer piece without its newline: a line too long
                long = len(raw) == limit + 3 and not raw.endswith(b"\n")
                total += len(raw)
                while long and (rest := handle.readline(1 << 20)):  # read past the rest, never held
                    total += len(rest)
                    if rest.endswith(b"\n") or total > boundary.MAX_FILE_BYTES:
                        break
            except OSError as exc:
                raise InputError(Problem(display(path), None, f"cannot read: {exc.strerror}")) from None
            if not raw:
                return
            number += 1
            if total > boundary.MAX_FILE_BYTES:
                raise InputError(Problem(display(path), None, f"file is larger than {boundary.MAX_FILE_BYTES:,} bytes"))
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            raw = raw.removesuffix(b"\n").rstrip(b"\r")
            if not raw.strip():
                continue
            if long or len(raw) > limit:
                problems.append(Problem(display(path), number, f"line is longer than {limit:,} bytes"))
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(Problem(display(path), number, f"invalid UTF-8 (byte {exc.start + 1} of the line)"))
                continue
            yield number, text


def iter_json_objects(path: Path, problems: list[Problem], *, data: bytes | None = None,
                      stream: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSONL line that parses to an object within the
    input boundary's limits (``load.boundary``). ``stream``: the file read line by line
    (``stream_lines``) rather than whole."""
    for number, text in (stream_lines(path, problems) if stream else iter_lines(path, problems, data=data)):
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
    lines: dict[str, int] = {}
    records = [record for _, record in validated_stream(path, problems, model=model, what=what, prepare=prepare,
                                                        empty=empty, lines=lines,
                                                        objects=iter_json_objects(path, problems, data=data))]
    return records, lines


def validated_stream(
    path: Path, problems: list[Problem], *, model: type[Record], what: str,
    prepare: Callable[[dict[str, Any], int], dict[str, Any] | Problem], empty: str, lines: dict[str, int],
    objects: Iterator[tuple[int, dict[str, Any]]],
) -> Iterator[tuple[int, Record]]:
    """``validated_records`` one record at a time, as ``objects`` yields them: ``(line, record)``;
    ``lines`` (the line of each id, for the duplicate check) filled as it goes."""
    records = 0
    for number, obj in objects:
        if records >= boundary.MAX_RECORDS:
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
        records += 1
        yield number, record
    if not records and not problems:
        problems.append(Problem(display(path), None, empty))


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
