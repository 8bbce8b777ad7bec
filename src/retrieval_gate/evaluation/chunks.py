"""A suite's chunks, in the unit its chunking counts (characters, or the model's word pieces),
and how many of them the model cuts at its limit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_gate.chunk.chunking import Chunk, ChunkSettings, chunk_kb
from retrieval_gate.embed.tokens import load_tokens
from retrieval_gate.errors import RetrievalGateError, UsageError
from retrieval_gate.models import KnowledgeBase


def suite_chunks(kb: KnowledgeBase, *, chunking: ChunkSettings, model: str) -> tuple[Chunk, ...]:
    """``chunk_kb`` with the suite's chunking; ``unit: tokens`` counts ``model``'s word pieces."""
    tokens = None
    if chunking.unit == "tokens":
        tokens = load_tokens(model)
        if tokens is None:
            raise UsageError(f"chunking.unit: tokens needs the tokenizer of model {model!r} "
                             "(tokenizer.json in its folder)")
    return chunk_kb(kb, settings=chunking, tokens=tokens)


SPECIAL_TOKENS = 2  # [CLS] and [SEP]: counted in the model's limit, not in a chunk's size


def truncation_extras(*, model: str, chunks: Sequence[Chunk]) -> dict[str, Any] | None:
    """How many chunks exceed ``model``'s limit (``max_seq_length`` word pieces, special tokens
    counted): their tails are never embedded. None when the model's tokenizer is not at hand."""
    try:
        tokens = load_tokens(model)
    except RetrievalGateError:
        return None
    report = tokens.truncation([c.text for c in chunks]) if tokens is not None else None
    return report.as_extras() if report is not None else None


def truncation_line(extras: dict[str, Any] | None) -> str | None:
    """``5 of 229 chunks exceed the model's 256 word pieces (longest 333): 310 word pieces never embedded``."""
    if not extras:
        return None
    if not extras["chunks"]:
        return f"no chunk exceeds the model's {extras['limit']} word pieces (longest {extras['longest']})"
    return (f"{extras['chunks']} of {extras['of']} chunks exceed the model's {extras['limit']} word pieces "
            f"(longest {extras['longest']}): {extras['pieces_cut']} word pieces never embedded; "
            f"to embed every word: {truncation_fix(extras)}")


def truncation_fix(extras: dict[str, Any]) -> str:
    """The chunking that fits the model: chunks counted in its word pieces, at most its limit less
    the two special tokens a BERT-style model adds (``[CLS]``, ``[SEP]``)."""
    return f"`chunking: {{unit: tokens, size: {max(1, int(extras['limit']) - SPECIAL_TOKENS)}}}`"
