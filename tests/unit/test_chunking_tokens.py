"""``chunking.unit: tokens``: windows counted in the tokenizer's word pieces (here a whitespace
tokenizer of our ``TokenCounter`` interface, so every count can be checked by hand)."""

from __future__ import annotations

import itertools
import re

import pytest

from retrieval_gate.chunk.chunking import ChunkSettings, chunking_fingerprint, split_by_tokens, split_card
from retrieval_gate.errors import UsageError


class Words:
    """One word piece per whitespace-separated word."""

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]

    def count(self, text: str) -> int:
        return len(text.split())


TEXT = " ".join(f"w{i}" for i in range(170))


def test_every_window_holds_at_most_size_word_pieces_and_all_words_are_kept():
    pieces = split_by_tokens(TEXT, size=50, overlap=0, tokens=Words())
    assert [len(p.split()) for p in pieces] == [50, 50, 50, 20]
    assert " ".join(pieces) == TEXT


def test_consecutive_windows_share_overlap_word_pieces():
    pieces = split_by_tokens(TEXT, size=50, overlap=5, tokens=Words())
    assert all(len(p.split()) == 50 for p in pieces[:-1])
    for before, after in itertools.pairwise(pieces):
        assert before.split()[-5:] == after.split()[:5]
    assert pieces[-1].split()[-1] == "w169"


def test_a_window_ends_at_a_sentence_break_in_its_second_half():
    text = " ".join(f"w{i}" for i in range(40)) + ". " + " ".join(f"v{i}" for i in range(40))
    pieces = split_by_tokens(text, size=60, overlap=0, tokens=Words())
    assert pieces[0].endswith("w39.") and pieces[1].startswith("v0")


def test_the_title_takes_its_share_of_the_size():
    settings = ChunkSettings(size=50, overlap=0, unit="tokens")
    texts = split_card(TEXT, title="Big Title", settings=settings, tokens=Words())
    assert [len(t.split()) for t in texts][:3] == [50, 50, 50] and texts[0].startswith("Big Title\n\nw0")


def test_characters_stay_the_default_and_keep_the_fingerprint_baselines_have():
    assert ChunkSettings().unit == "characters"
    assert "unit" not in chunking_fingerprint(kb_format="markdown", settings=ChunkSettings())
    assert chunking_fingerprint(kb_format="markdown", settings=ChunkSettings(unit="tokens"))["unit"] == "tokens"


def test_tokens_without_a_tokenizer_is_refused():
    from retrieval_gate.chunk.chunking import chunk_kb
    from retrieval_gate.models import KnowledgeBase

    kb = KnowledgeBase(path="kb", format="markdown", cards=(), sha256="0")
    with pytest.raises(UsageError):
        chunk_kb(kb, ChunkSettings(unit="tokens"))
