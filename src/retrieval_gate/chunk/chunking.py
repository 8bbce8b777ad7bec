"""Chunking (pure): knowledge-base cards → the passages that get embedded and indexed.

Markdown/text cards (a KB folder, ``kb.format == "markdown"``):

1. split at headings (``#`` … ``######`` at the start of a line, outside fenced code); a section
   that holds only headings joins the section after it, so a title is never a chunk on its own;
2. a section longer than ``size`` characters is cut into windows of at most ``size`` characters,
   cut at a paragraph, line, sentence or word boundary in the window's second half where there
   is one; the next window starts ``overlap`` characters before the cut (moved forward to a word
   start), so consecutive windows share at most ``overlap`` characters;
3. each chunk is embedded as ``title + "\\n\\n" + section`` (the card's title gives every section
   its context) unless the section already starts with the title.

Chunk ids are ``{card_id}#{n}`` (n = 0, 1, … in reading order); every chunk carries its card id
as ``parent_id`` (card identity, docs/decisions.md).

Record cards (JSONL cards, a BEIR ``corpus.jsonl``): one chunk per record, embedded as
``(title + " " + text).strip()`` — the BEIR convention, so numbers compare with published ones.
Records are not split: the model truncates them at its ``max_seq_length`` (256 word pieces for
all-MiniLM-L6-v2). The chunk id is the record id and ``parent_id`` its card (``parent_id`` or id),
so pre-chunked JSONL KBs keep their own chunks.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from retrieval_gate.defaults import MIN_CHUNK_SIZE
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.models import KnowledgeBase

Scalar = str | int | float | bool

_HEADING = re.compile(r"^#{1,6}[ \t]+\S")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_BREAKS = ("\n\n", "\n", ". ", "? ", "! ", " ")


class ChunkSettings(BaseModel):
    """Markdown/text cards are split by headings, then by size with overlap, both counted in
    ``unit``: characters (the default) or the embedder's word pieces (``tokens``)."""

    model_config = ConfigDict(extra="forbid")

    size: int = Field(default=1200, ge=MIN_CHUNK_SIZE)
    overlap: int = Field(default=150, ge=0)
    by_headings: bool = True
    unit: Literal["characters", "tokens"] = "characters"

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkSettings:
        # Checked when the config is read (a file fails where a flag would), not while chunking.
        if self.overlap >= self.size:
            raise ValueError(f"chunk overlap ({self.overlap}) must be smaller than chunk size ({self.size})")
        return self


class TokenCounter(Protocol):
    """The embedder's tokenizer (``embed.tokens.ModelTokens``): word pieces, no special tokens."""

    def offsets(self, text: str) -> Sequence[tuple[int, int]]: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class Chunk:
    """One embedded passage. ``text`` is exactly what the model sees; ``sha256`` is its hash."""

    id: str
    parent_id: str
    text: str
    position: int = 0
    metadata: dict[str, Scalar] = field(default_factory=dict)
    sha256: str = ""

    @property
    def card_id(self) -> str:
        return self.parent_id


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_chunk(*, id: str, parent_id: str, text: str, position: int = 0,
               metadata: dict[str, Any] | None = None) -> Chunk:
    return Chunk(id=id, parent_id=parent_id, text=text, position=position,
                 metadata=scalar_metadata(metadata or {}), sha256=text_sha256(text))


def scalar_metadata(metadata: dict[str, Any]) -> dict[str, Scalar]:
    """The metadata a vector store can filter on: string keys with string/number/bool values."""
    return {str(k): v for k, v in metadata.items() if isinstance(v, Scalar)}


def strategy(kb_format: str) -> str:
    return "markdown" if kb_format == "markdown" else "record"


def chunking_fingerprint(*, kb_format: str, settings: ChunkSettings) -> dict[str, Any]:
    """What identifies the chunking (goes into the results config and the store's metadata).
    Sizes only matter for Markdown/text cards, so records record none."""
    if strategy(kb_format) == "record":
        return {"strategy": "record", "text": "title + ' ' + text"}
    out: dict[str, Any] = {"strategy": "markdown", "size": settings.size, "overlap": settings.overlap,
                           "by_headings": settings.by_headings}
    if settings.unit != "characters":  # characters: the fingerprint every earlier baseline has
        out["unit"] = settings.unit
    return out


def chunk_kb(kb: KnowledgeBase, settings: ChunkSettings, *, tokens: TokenCounter | None = None) -> tuple[Chunk, ...]:
    """Every card of ``kb`` as chunks, in KB order (see the module docstring). ``tokens``: the
    embedder's tokenizer, needed when ``settings.unit`` is ``tokens``."""
    if settings.unit == "tokens" and tokens is None and strategy(kb.format) != "record":
        raise UsageError("chunking.unit: tokens needs the model's tokenizer (tokenizer.json in its folder)")
    chunks: list[Chunk] = []
    if strategy(kb.format) == "record":
        for card in kb.cards:
            text = f"{card.title} {card.text}".strip() if card.title else card.text.strip()
            chunks.append(make_chunk(id=card.id, parent_id=card.card_id, text=text,
                                     metadata=card.metadata))
    else:
        for card in kb.cards:
            for n, text in enumerate(split_card(card.text, title=card.title, settings=settings, tokens=tokens)):
                chunks.append(make_chunk(id=f"{card.id}#{n}", parent_id=card.card_id, text=text,
                                         position=n, metadata=card.metadata))
    _check_unique(chunks, kb)
    return tuple(chunks)


def _check_unique(chunks: list[Chunk], kb: KnowledgeBase) -> None:
    cards: dict[str, list[str]] = {}
    for chunk in chunks:
        cards.setdefault(chunk.id, []).append(chunk.parent_id)
    clashes = {cid: parents for cid, parents in cards.items() if len(parents) > 1}
    if clashes:
        raise InputError([
            Problem(kb.path, None, f"chunk id {cid!r} is produced by more than one entry (cards "
                                   f"{', '.join(repr(p) for p in dict.fromkeys(parents))}); rename one card")
            for cid, parents in sorted(clashes.items())
        ])


def split_card(body: str, *, title: str, settings: ChunkSettings, tokens: TokenCounter | None = None) -> list[str]:
    """One card's body → the texts to embed (title-prefixed sections, cut to size)."""
    sections = split_sections(body) if settings.by_headings else [body.strip()]
    out = []
    for section in sections:
        if settings.unit == "tokens" and tokens is not None:
            # The size counts the embedded text's word pieces, the title's included (the model's
            # special tokens not): a title takes its share of every window.
            lead = tokens.count(f"{title.strip()}\n\n") if title.strip() and not \
                section.lstrip("# \t").startswith(title.strip()) else 0
            size = max(settings.overlap + 1, settings.size - lead)
            pieces = split_by_tokens(section, size=size, overlap=settings.overlap, tokens=tokens)
        else:
            pieces = split_by_size(section, size=settings.size, overlap=settings.overlap)
        out.extend(with_title(piece, title) for piece in pieces)
    return out


def with_title(text: str, title: str) -> str:
    title = title.strip()
    if not title or text.lstrip("# \t").startswith(title):
        return text
    return f"{title}\n\n{text}"


def split_sections(body: str) -> list[str]:
    """Split Markdown at headings outside fenced code; heading-only sections join the next one."""
    raw: list[list[str]] = [[]]
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _HEADING.match(line) and any(s.strip() for s in raw[-1]):
            raw.append([])
        raw[-1].append(line)
    out: list[str] = []
    carry = ""
    for lines in raw:
        text = "\n".join(lines).strip()
        if not text:
            continue
        if carry:
            text = f"{carry}\n\n{text}"
            carry = ""
        if all(_HEADING.match(line) for line in text.split("\n") if line.strip()):
            carry = text
            continue
        out.append(text)
    if carry:
        if out:
            out[-1] = f"{out[-1]}\n\n{carry}"
        else:
            out.append(carry)
    return out


def split_by_size(text: str, *, size: int, overlap: int) -> list[str]:
    """Windows of at most ``size`` characters; consecutive windows share at most ``overlap``.

    A window ends at the last paragraph/line/sentence/word break in its second half (else at
    ``size``); the next one starts ``overlap`` characters before that end, moved forward to the
    start of a word, and always after the previous start (so the loop ends)."""
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    pieces: list[str] = []
    start, n = 0, len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:
            end = _last_break(text, start + size // 2, end) or end
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        if end >= n:
            break
        nxt = end - overlap
        if overlap and 0 < nxt < end and not text[nxt - 1].isspace():
            space = _next_space(text, nxt, end)
            nxt = space + 1 if space is not None else nxt
        start = nxt if nxt > start else end
        while start < n and text[start].isspace():
            start += 1
    return pieces


def split_by_tokens(text: str, *, size: int, overlap: int, tokens: TokenCounter) -> list[str]:
    """As ``split_by_size``, counted in the tokenizer's word pieces: a window holds at most
    ``size`` of them and ends at the last paragraph/line/sentence/word break in its second half
    (else after its last whole word piece); the next starts ``overlap`` word pieces before that
    end (at a word piece that begins a word)."""
    text = text.strip()
    offsets = list(tokens.offsets(text))
    if len(offsets) <= size:
        return [text] if text else []
    starts = [s for s, _e in offsets]
    pieces: list[str] = []
    first, count, n = 0, len(offsets), len(text)
    while first < count:
        last = min(first + size, count)  # word pieces [first, last) fit
        begin = starts[first]
        end = offsets[last - 1][1] if last < count else n
        if last < count:
            end = _last_break(text, starts[first + size // 2], min(end + 1, n)) or end  # a break just after counts
        piece = text[begin:end].strip()
        if piece:
            pieces.append(piece)
        if last >= count and end >= offsets[-1][1]:
            break
        after = bisect_left(starts, end)  # the first word piece not in this window
        nxt = after - overlap
        while overlap and first < nxt < after and nxt > 0 and not text[starts[nxt] - 1].isspace():
            nxt += 1  # to a word's first piece
        first = nxt if nxt > first else max(after, first + 1)
    return pieces


def _last_break(text: str, lo: int, hi: int) -> int | None:
    for brk in _BREAKS:
        pos = text.rfind(brk, lo, hi)
        if pos > lo:
            return pos + (len(brk) - 1 if brk.strip() else 0)
    return None


def _next_space(text: str, lo: int, hi: int) -> int | None:
    for i in range(lo, hi):
        if text[i].isspace():
            return i
    return None
