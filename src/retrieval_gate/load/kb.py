"""Knowledge bases: JSONL cards, a BEIR ``corpus.jsonl`` (``_id``), or a folder of Markdown/text
cards (one card per file; optional YAML front matter with ``id``, ``title`` and metadata)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import sha256_path
from retrieval_gate.load.textfile import (
    display,
    iter_json_objects,
    raise_if,
    read_bytes,
    validation_problems,
)
from retrieval_gate.models import Card

TEXT_SUFFIXES = (".md", ".markdown", ".txt")


@dataclass(frozen=True)
class KnowledgeBase:
    cards: tuple[Card, ...]
    path: str
    sha256: str
    format: str  # "jsonl" | "beir" | "markdown"
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def card_ids(self) -> frozenset[str]:
        """Card identities (``parent_id`` or id) — what gold ids must resolve to."""
        return frozenset(c.card_id for c in self.cards)

    @property
    def chunk_to_card(self) -> dict[str, str]:
        """Every entry id → its card identity, for mapping a chunk-grained ranking to cards."""
        return {c.id: c.card_id for c in self.cards}


def load_kb(path: Path) -> KnowledgeBase:
    path = Path(path)
    if not path.exists():
        raise InputError(Problem(display(path), None, "knowledge base not found"))
    if path.is_dir():
        corpus = path / "corpus.jsonl"
        if corpus.is_file():
            kb = _load_jsonl(corpus, fmt="beir")
            return KnowledgeBase(kb.cards, display(path), kb.sha256, "beir", kb.lines)
        return _load_folder(path)
    return _load_jsonl(path, fmt="jsonl")


def _load_jsonl(path: Path, fmt: str) -> KnowledgeBase:
    problems: list[Problem] = []
    cards: list[Card] = []
    lines: dict[str, int] = {}
    for number, obj in iter_json_objects(path, problems):
        obj = dict(obj)
        if "_id" in obj and "id" not in obj:
            obj["id"] = obj.pop("_id")
        if obj.get("title") is None:
            obj.pop("title", None)
        try:
            card = Card.model_validate(obj)
        except ValidationError as exc:
            problems.extend(validation_problems(path, number, exc))
            continue
        if card.id in lines:
            problems.append(Problem(display(path), number,
                                    f"duplicate card id {card.id!r} (first at line {lines[card.id]})"))
            continue
        lines[card.id] = number
        cards.append(card)
    raise_if(problems)
    if not cards:
        raise InputError(Problem(display(path), None, "knowledge base is empty: no cards"))
    return KnowledgeBase(tuple(cards), display(path), sha256_path(path), fmt, lines)


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str, int]:
    """Split ``---\\nyaml\\n---\\nbody`` → (front matter or None, body, lines consumed)."""
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return None, text, 0
    rest = text.split("\n", 1)[1]
    end = rest.find("\n---")
    if end < 0:
        raise ValueError("front matter opened with '---' is never closed")
    block = rest[:end]
    after = rest[end + 4 :]
    after = after.split("\n", 1)[1] if "\n" in after else ""
    data = yaml.safe_load(block) if block.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("front matter must be a YAML mapping")
    return data, after, block.count("\n") + 3


def _first_heading(body: str) -> str:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _load_folder(folder: Path) -> KnowledgeBase:
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
        raw = read_bytes(file)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            problems.append(Problem(name, line, "invalid UTF-8"))
            continue
        try:
            meta, body, _ = split_front_matter(text.replace("\r\n", "\n"))
        except (ValueError, yaml.YAMLError) as exc:
            problems.append(Problem(name, 1, f"front matter: {exc}"))
            continue
        meta = dict(meta or {})
        card_id = str(meta.pop("id", file.relative_to(folder).with_suffix("").as_posix()))
        title = str(meta.pop("title", "") or _first_heading(body))
        extra = meta.pop("metadata", {})
        if not isinstance(extra, dict):
            problems.append(Problem(name, 1, "front matter 'metadata' must be a mapping"))
            continue
        metadata = {**{k: v for k, v in meta.items() if k != "parent_id"}, **extra}
        if not body.strip():
            problems.append(Problem(name, 1, "card has no text"))
            continue
        if card_id in seen:
            problems.append(Problem(name, 1, f"duplicate card id {card_id!r} (also {seen[card_id]})"))
            continue
        try:
            cards.append(Card(id=card_id, text=body, title=title, metadata=metadata))
        except ValidationError as exc:
            problems.extend(validation_problems(file, 1, exc))
            continue
        seen[card_id] = name
    raise_if(problems)
    if not cards:
        raise InputError(Problem(display(folder), None,
                                 "knowledge base is empty: no .md, .markdown or .txt cards"))
    return KnowledgeBase(tuple(cards), display(folder), sha256_path(folder), "markdown")
