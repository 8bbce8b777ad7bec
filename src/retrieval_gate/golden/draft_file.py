"""The draft of a golden set (``retrieval-gate cases draft``): ``draft.jsonl`` (one drafted query a
line, ``golden.draft_entry.DraftEntry``) written and read back, checked line by line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from retrieval_gate.errors import Problem, UsageError
from retrieval_gate.golden.draft_entry import DraftEntry
from retrieval_gate.load.textfile import display, iter_json_objects, raise_if, validation_problems


def draft_text(entries: Sequence[DraftEntry]) -> str:
    """The stable text: one object a line, keys sorted, no default noise."""
    return "".join(json.dumps(e.model_dump(mode="json", exclude_none=True), ensure_ascii=False, sort_keys=True) + "\n"
                   for e in entries)


def read_draft(path: Path) -> dict[str, DraftEntry]:
    """Case id → drafted entry, in file order; every problem as ``file:line``."""
    if not path.is_file():
        raise UsageError(f"{path}: no such draft (write it with `retrieval-gate cases draft`)")
    problems: list[Problem] = []
    out: dict[str, DraftEntry] = {}
    for number, obj in iter_json_objects(path, problems=problems):
        try:
            entry = DraftEntry.model_validate(obj)
        except ValidationError as exc:
            problems.extend(validation_problems(path, line=number, exc=exc))
            continue
        if entry.id in out:
            problems.append(Problem(display(path), number, f"id {entry.id!r} is drafted twice"))
        out[entry.id] = entry
    if not out and not problems:
        problems.append(Problem(display(path), None, "no drafted queries: the file is empty"))
    raise_if(problems)
    return out
