"""Reading user files line by line, collecting every problem instead of stopping at the first."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.load.fastpath import decoded_text, text_lines


def display(path: Path) -> str:
    """How a path is named in messages: as the user gave it."""
    return str(path)


def read_bytes(path: Path) -> bytes:
    """Read a whole file, or raise a one-line InputError naming it."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(Problem(display(path), None, "file not found")) from None
    except IsADirectoryError:
        raise InputError(Problem(display(path), None, "is a directory, expected a file")) from None
    except OSError as exc:
        raise InputError(Problem(display(path), None, f"cannot read: {exc.strerror}")) from None


def iter_lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line; undecodable lines become problems."""
    data = read_bytes(path)
    text = decoded_text(data)  # the whole file decodes: no per-line decoding (load/fastpath.py)
    if text is not None:
        yield from text_lines(text)
        return
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(
                Problem(display(path), number, f"invalid UTF-8 (byte {exc.start + 1} of the line)")
            )
            continue
        yield number, text


def iter_json_objects(path: Path, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSONL line that parses to an object."""
    for number, text in iter_lines(path, problems):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(display(path), number, f"JSON syntax error: {exc.msg} (column {exc.colno})")
            )
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
    prepare: Callable[[dict[str, Any], int], dict[str, Any] | Problem],
) -> tuple[list[Record], dict[str, int]]:
    """Each JSONL object of ``path``, ``prepare``d and validated into ``model``, in file order,
    with the line of each id. A line that does not validate, or repeats an earlier id, becomes a
    problem (``duplicate <what> id``) and is left out."""
    records: list[Record] = []
    lines: dict[str, int] = {}
    for number, obj in iter_json_objects(path, problems):
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
        if record_id in lines:
            problems.append(Problem(display(path), number,
                                    f"duplicate {what} id {record_id!r} (first at line {lines[record_id]})"))
            continue
        lines[record_id] = number
        records.append(record)
    return records, lines


def validation_problems(path: Path, line: int, exc: ValidationError) -> list[Problem]:
    """Turn a pydantic ValidationError into one readable problem per field."""
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden":
            message = f"unknown field {loc!r}"
        elif kind == "missing":
            message = f"missing required field {loc!r}"
        else:
            msg = err["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            message = f"field {loc!r}: {msg}" if loc else msg
        out.append(Problem(display(path), line, message))
    return out


def raise_if(problems: list[Problem]) -> None:
    if problems:
        raise InputError(sorted(set(problems), key=lambda p: (p.path, p.line or 0, p.message)))
