"""Chunking: Markdown split by headings then by size with overlap; records embed title + text."""

from __future__ import annotations

import itertools
import re

import pytest
from pydantic import ValidationError

from retrieval_gate.chunk.chunking import (
    ChunkSettings,
    chunk_kb,
    chunking_fingerprint,
    split_by_size,
    split_sections,
    text_sha256,
    with_title,
)
from retrieval_gate.errors import InputError
from retrieval_gate.models import Card, KnowledgeBase


def kb_of(cards: list[Card], fmt: str) -> KnowledgeBase:
    return KnowledgeBase(cards=tuple(cards), path="kb", sha256="0" * 64, format=fmt)


WORDS = " ".join(f"w{i}" for i in range(400))  # 400 distinct words, 2–4 characters each


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("just text", ["just text"]),
        ("# Title\n\nintro\n\n## A\n\nalpha\n\n## B\n\nbeta",
         ["# Title\n\nintro", "## A\n\nalpha", "## B\n\nbeta"]),
        # a heading-only section joins the next one, so a title is never a chunk by itself
        ("# Title\n\n## A\n\nalpha", ["# Title\n\n## A\n\nalpha"]),
        # text before the first heading is its own section
        ("preface\n# H\nbody", ["preface", "# H\nbody"]),
        # a '#' line inside fenced code is not a heading
        ("## Code\n```\n# comment\n```\n## Next\nx", ["## Code\n```\n# comment\n```", "## Next\nx"]),
        # '#tag' without a space is not a heading
        ("## A\n#notaheading\n## B\ny", ["## A\n#notaheading", "## B\ny"]),
        # a trailing heading without text joins the section before it
        ("## A\nalpha\n## B", ["## A\nalpha\n\n## B"]),
    ],
)
def test_split_sections_table(body: str, expected: list[str]) -> None:
    assert split_sections(body) == expected


@pytest.mark.parametrize(("size", "overlap"), [(50, 0), (50, 10), (120, 30), (333, 100), (1000, 150)])
def test_split_by_size_windows_fit_cover_everything_and_overlap_at_most_overlap(size: int, overlap: int) -> None:
    pieces = split_by_size(WORDS, size=size, overlap=overlap)
    assert len(pieces) >= len(WORDS) / size
    assert all(len(p) <= size for p in pieces)
    words = [w for p in pieces for w in p.split()]
    # every word appears, in order, and never cut in half (all words are well-formed)
    assert all(re.fullmatch(r"w\d+", w) for w in words)
    seen: list[str] = list(dict.fromkeys(words))
    assert seen == WORDS.split()
    for left, right in itertools.pairwise(pieces):
        shared = [w for w in right.split() if w in set(left.split())]
        assert len(" ".join(shared)) <= overlap
        if overlap >= 10:  # a window of ≥ 10 characters always holds at least one whole word here
            assert shared, "consecutive windows share the overlap"


def test_split_by_size_without_overlap_partitions_the_text() -> None:
    pieces = split_by_size(WORDS, size=64, overlap=0)
    assert " ".join(pieces) == WORDS


def test_split_by_size_prefers_paragraph_then_sentence_breaks() -> None:
    text = "First paragraph is here.\n\nSecond one. It has two sentences and goes on for a while longer."
    assert split_by_size(text, size=40, overlap=0)[0] == "First paragraph is here."
    text = "One sentence ends here. Then another sentence runs past the window"
    assert split_by_size(text, size=40, overlap=0)[0] == "One sentence ends here."


def test_split_by_size_short_text_is_one_piece_and_blank_is_none() -> None:
    assert split_by_size("  short  ", size=100, overlap=10) == ["short"]
    assert split_by_size("   ", size=100, overlap=10) == []


def test_split_by_size_word_longer_than_the_window_is_cut_hard_and_terminates() -> None:
    pieces = split_by_size("x" * 250, size=100, overlap=20)
    assert all(len(p) <= 100 for p in pieces)
    assert pieces[0] == "x" * 100


@pytest.mark.parametrize(
    ("text", "title", "expected"),
    [
        ("## Refunds\nbody", "Payments", "Payments\n\n## Refunds\nbody"),
        ("# Payments\nbody", "Payments", "# Payments\nbody"),  # already starts with the title
        ("body", "", "body"),
    ],
)
def test_with_title_table(text: str, title: str, expected: str) -> None:
    assert with_title(text, title) == expected


def test_markdown_cards_chunk_ids_parent_ids_and_title_prefix() -> None:
    body = "# Refunds\n\nHow refunds work.\n\n## Card refunds\n\n5-10 days.\n\n## Bank refunds\n\n3-5 days."
    kb = kb_of([Card(id="refunds", title="Refunds", text=body, metadata={"locale": "en-US", "tags": ["a"]})],
               "markdown")
    chunks = chunk_kb(kb, ChunkSettings(size=1200, overlap=150))
    assert [c.id for c in chunks] == ["refunds#0", "refunds#1", "refunds#2"]
    assert {c.parent_id for c in chunks} == {"refunds"}
    assert [c.position for c in chunks] == [0, 1, 2]
    assert chunks[0].text == "# Refunds\n\nHow refunds work."
    assert chunks[1].text == "Refunds\n\n## Card refunds\n\n5-10 days."
    assert chunks[1].metadata == {"locale": "en-US"}  # lists are not filterable metadata
    assert chunks[1].sha256 == text_sha256(chunks[1].text)


def test_markdown_card_with_parent_id_keeps_its_card_identity() -> None:
    kb = kb_of([Card(id="part-2", parent_id="guide", text="## Step\ntext")], "markdown")
    (chunk,) = chunk_kb(kb, ChunkSettings())
    assert (chunk.id, chunk.parent_id, chunk.card_id) == ("part-2#0", "guide", "guide")


def test_long_section_is_split_by_size_every_piece_under_its_card() -> None:
    kb = kb_of([Card(id="long", text="## Long\n\n" + WORDS)], "markdown")
    chunks = chunk_kb(kb, ChunkSettings(size=200, overlap=40, by_headings=True))
    assert len(chunks) > 5
    assert {c.parent_id for c in chunks} == {"long"}
    assert len({c.id for c in chunks}) == len(chunks)


def test_by_headings_off_splits_only_by_size() -> None:
    kb = kb_of([Card(id="c", text="## A\nalpha\n## B\nbeta")], "markdown")
    assert [c.text for c in chunk_kb(kb, ChunkSettings(by_headings=False))] == ["## A\nalpha\n## B\nbeta"]


@pytest.mark.parametrize("fmt", ["beir", "jsonl"])
def test_records_embed_title_space_text_beir_convention_unsplit(fmt: str) -> None:
    long_text = WORDS * 3  # far above any chunk size: records are never split
    kb = kb_of([Card(id="d1", title="A title", text="Body text."), Card(id="d2", text=" no title "),
                Card(id="c9", parent_id="doc9", title="T", text=long_text)], fmt)
    chunks = chunk_kb(kb, ChunkSettings(size=100, overlap=10))
    assert [(c.id, c.parent_id, c.text) for c in chunks] == [
        ("d1", "d1", "A title Body text."), ("d2", "d2", "no title"), ("c9", "doc9", "T " + long_text)]


def test_duplicate_chunk_ids_are_an_input_error_naming_the_cards() -> None:
    # loaders never produce this; a hand-built KB can, and a store would silently overwrite
    kb = kb_of([Card(id="d", parent_id="p1", text="one"), Card(id="d", parent_id="p2", text="two")], "jsonl")
    with pytest.raises(InputError, match=r"chunk id 'd' .*'p1', 'p2'"):
        chunk_kb(kb, ChunkSettings())


def test_overlap_not_smaller_than_size_is_refused_by_the_settings_model() -> None:
    # Refused when the settings are read (a config file fails where a flag would), before any chunking.
    with pytest.raises(ValidationError, match=r"chunk overlap \(100\) must be smaller than chunk size \(100\)"):
        ChunkSettings(size=100, overlap=100)
    assert ChunkSettings(size=100, overlap=99).overlap == 99


def test_fingerprint_records_sizes_only_where_they_apply() -> None:
    settings = ChunkSettings(size=500, overlap=50)
    assert chunking_fingerprint(kb_format="markdown", settings=settings) == {
        "strategy": "markdown", "size": 500, "overlap": 50, "by_headings": True}
    assert chunking_fingerprint(kb_format="beir", settings=settings)["strategy"] == "record"
    assert chunking_fingerprint(kb_format="beir", settings=settings) == chunking_fingerprint(
        kb_format="jsonl", settings=ChunkSettings())


def test_chunking_is_pure_same_input_same_chunks() -> None:
    kb = kb_of([Card(id="a", text="## A\n" + WORDS)], "markdown")
    assert chunk_kb(kb, ChunkSettings(size=300, overlap=30)) == chunk_kb(kb, ChunkSettings(size=300, overlap=30))
