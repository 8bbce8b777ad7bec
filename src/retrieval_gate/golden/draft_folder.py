"""The draft folder ``cases draft`` and ``label top-up`` both write and ``label apply --draft``
reads: ``draft.jsonl`` (one drafted query a line, ``golden.draft_entry.DraftEntry``; read back
checked line by line), ``label.html`` (``golden.label_page``) and ``draft.md`` (the summary)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from retrieval_gate.errors import Problem, UsageError
from retrieval_gate.files import confined, write_text_atomic
from retrieval_gate.golden.draft_entry import DraftEntry
from retrieval_gate.golden.label_page import render_label_page
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


DRAFT_FILES = ("draft.jsonl", "label.html", "draft.md")


def refuse_replacing_draft(out: Path, *, force: bool) -> None:
    """``label top-up --out DIR`` onto a folder that holds a draft already (``cases draft``'s or an
    earlier top-up's) would replace it, and a labels file downloaded from its page could no longer
    be applied: refused (exit 2) unless ``force``."""
    there = [name for name in DRAFT_FILES if (out / name).exists()]
    if there and not force:
        raise UsageError(f"--out {out.as_posix()}: the folder holds a draft already ({', '.join(there)}); writing "
                         "this one there would replace it. Give another folder, or --force to replace it")


def free_draft_folder(base: Path) -> Path:
    """``base``, or ``base-2``, ``base-3``, … : the first that holds no draft (a folder ``label top-up
    --out`` takes without ``--force``), for a printed next command that runs as printed."""
    n = 1
    while True:
        folder = base if n == 1 else base.with_name(f"{base.name}-{n}")
        if not any((folder / name).exists() for name in DRAFT_FILES):
            return folder
        n += 1


def write_draft_files(out: Path, *, entries: list[DraftEntry], titles: dict[str, str], texts: dict[str, str],
                      graded: bool, labeller: str, summary: list[str], apply: str = "",
                      traffic: dict[str, int] | None = None) -> list[Path]:
    """DIR/draft.jsonl, DIR/label.html and DIR/draft.md (``summary``'s lines), each atomically,
    each confined to the repository (``files.confined``): the format ``cases draft`` and
    ``label top-up`` both write and ``label apply --draft`` reads; the paths written."""
    paths = [confined(out / name) for name in DRAFT_FILES]
    out.mkdir(parents=True, exist_ok=True)
    for path, text in zip(paths, draft_folder_texts(entries, titles=titles, texts=texts, graded=graded,
                                                     labeller=labeller, summary=summary, apply=apply,
                                                     traffic=traffic).values(), strict=True):
        write_text_atomic(path, text=text)
    return paths


def draft_folder_texts(entries: list[DraftEntry], *, titles: dict[str, str], texts: dict[str, str], graded: bool,
                       labeller: str, summary: list[str], apply: str = "",
                       traffic: dict[str, int] | None = None) -> dict[str, str]:
    """The draft folder's files by name (``DRAFT_FILES``), as text: for a writer that is not the
    CLI's (the action writes through its scrubbing context)."""
    text = draft_text(entries)
    return {"draft.jsonl": text,
            "label.html": render_label_page(entries, titles=titles, texts=texts, graded=graded, labeller=labeller,
                                            key_text=text, apply=apply, traffic=traffic),
            "draft.md": "\n".join(summary)}
