"""Knowledge bases: JSONL cards, a BEIR ``corpus.jsonl`` (``_id``), or a folder of Markdown/text
cards (one card per file; optional YAML front matter with ``id``, ``title`` and metadata)."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import sha256_bytes, sha256_path
from retrieval_gate.load.boundary import bad_string
from retrieval_gate.load.textfile import (
    display,
    raise_if,
    read_bytes,
    validated_records,
    validation_problems,
)
from retrieval_gate.load.yamltext import safe_load
from retrieval_gate.models import Card, KnowledgeBase

TEXT_SUFFIXES = (".md", ".markdown", ".txt")


def load_kb(path: Path) -> KnowledgeBase:
    """Load a KB (JSONL cards, BEIR folder, Markdown/text folder); raise InputError listing every
    problem."""
    kb, problems = read_kb(path)
    raise_if(problems)
    assert kb is not None
    return kb


def read_kb(path: Path) -> tuple[KnowledgeBase | None, list[Problem]]:
    """Every card that loads, and every problem found. None when nothing loads."""
    path = Path(path)
    try:
        if not path.exists():
            raise InputError(Problem(display(path), None, "knowledge base not found"))
        if path.is_dir():
            corpus = path / "corpus.jsonl"
            if corpus.is_file():
                kb, problems = _load_jsonl(corpus, fmt="beir")
                if kb is not None:
                    kb = KnowledgeBase(kb.cards, display(path), kb.sha256, "beir", kb.lines)
                return kb, problems
            return _load_folder(path)
        return _load_jsonl(path, fmt="jsonl")
    except InputError as exc:
        return None, exc.problems


def _load_jsonl(path: Path, fmt: str) -> tuple[KnowledgeBase | None, list[Problem]]:
    problems: list[Problem] = []
    data = read_bytes(path)  # read once: a pipe works like a file

    def prepare(obj: dict[str, Any], number: int) -> dict[str, Any]:
        if "_id" in obj and "id" not in obj:
            obj["id"] = obj.pop("_id")
        if obj.get("title") is None:
            obj.pop("title", None)
        return obj

    cards, lines = validated_records(path, problems=problems, model=Card, what="card", prepare=prepare,
                                     empty="knowledge base is empty: no cards", data=data)
    if not cards:
        return None, problems
    return KnowledgeBase(tuple(cards), display(path), sha256_bytes(data), fmt, lines), problems


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str, int]:
    """Split ``---\\n<yaml>\\n---\\n<body>`` → (front matter or None, body, lines consumed).

    The block opens with a first line ``---`` and closes at the next line that is exactly
    ``---`` (or ``...``); an empty block is an empty mapping. Anchors and aliases are refused
    (``load.yamltext``)."""
    lines = text.split("\n")
    if lines[0].rstrip("\r") != "---":
        return None, text, 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            block = "\n".join(lines[1:i])
            data = safe_load(block, aliases=False) if block.strip() else {}
            if not isinstance(data, dict):
                raise ValueError("front matter must be a YAML mapping")
            bad = bad_string(data)
            if bad is not None:
                raise ValueError(f"string {bad[:40]!a} holds a lone surrogate: it cannot be written as UTF-8")
            return data, "\n".join(lines[i + 1 :]), i + 1
    raise ValueError("front matter opened with '---' is never closed")


def _plain(value: Any) -> Any:
    """YAML dates and times become ISO strings, so metadata stays JSON (and store) friendly."""
    if isinstance(value, date | datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8, decoded by the OS as a lone surrogate
        return False
    return True


def _first_heading(body: str) -> str:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _load_folder(folder: Path) -> tuple[KnowledgeBase | None, list[Problem]]:
    problems: list[Problem] = []
    cards: list[Card] = []
    seen: dict[str, str] = {}
    files = sorted(
        p for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    for file in files:
        name = display(file)
        if not _utf8(file.relative_to(folder).as_posix()):  # a card id, a store key, a JSON string: all UTF-8
            problems.append(Problem(name, None, "file name is not valid UTF-8 (card ids are made from file "
                                                "names): rename the file"))
            continue
        raw = read_bytes(file)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            problems.append(Problem(name, line, "invalid UTF-8"))
            continue
        try:
            meta, body, _ = split_front_matter(text.replace("\r\n", "\n"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 2 if mark is not None else 1  # +1 for 1-based, +1 for the '---'
            problems.append(Problem(name, line, f"front matter: {getattr(exc, 'problem', None) or exc}"))
            continue
        except ValueError as exc:
            problems.append(Problem(name, 1, f"front matter: {exc}"))
            continue
        meta = {str(k): _plain(v) for k, v in (meta or {}).items()}
        card_id = str(meta.pop("id", file.relative_to(folder).with_suffix("").as_posix()))
        parent_id = meta.pop("parent_id", None)
        title = str(meta.pop("title", "") or _first_heading(body))
        extra = meta.pop("metadata", {})
        if not isinstance(extra, dict):
            problems.append(Problem(name, 1, "front matter 'metadata' must be a mapping"))
            continue
        metadata = {**meta, **{str(k): _plain(v) for k, v in extra.items()}}
        if not body.strip():
            problems.append(Problem(name, 1, "card has no text"))
            continue
        if card_id in seen:
            problems.append(Problem(name, 1, f"duplicate card id {card_id!r} (also {seen[card_id]})"))
            continue
        try:
            cards.append(Card(id=card_id, text=body, title=title, metadata=metadata,
                              parent_id=None if parent_id is None else str(parent_id)))
        except ValidationError as exc:
            problems.extend(validation_problems(file, line=1, exc=exc))
            continue
        seen[card_id] = name
    if not cards:
        if not problems:
            problems.append(Problem(display(folder), None,
                                    "knowledge base is empty: no .md, .markdown or .txt cards"))
        return None, problems
    return KnowledgeBase(tuple(cards), display(folder), sha256_path(folder), "markdown"), problems
