"""The embedder's own tokenizer, without the model: how many word pieces a text is, where each
starts and ends, and the model's limit (``max_seq_length``), past which the model never sees a
text's tail.

Read from the model folder's ``tokenizer.json`` (the ``tokenizers`` library: no torch, no
weights) and ``sentence_bert_config.json``. A folder without ``tokenizer.json`` has no
``ModelTokens`` (``load_tokens`` returns None): chunking in tokens then cannot be done, and the
truncation count is left out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer


@dataclass(frozen=True)
class Truncation:
    """Chunks longer than the model's limit: how many, the longest, the word pieces cut."""

    limit: int
    chunks: int
    of: int
    longest: int
    pieces_cut: int

    def as_extras(self) -> dict[str, int]:
        return {"limit": self.limit, "chunks": self.chunks, "of": self.of, "longest": self.longest,
                "pieces_cut": self.pieces_cut}


class ModelTokens:
    def __init__(self, folder: Path):
        self._tok: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.limit = _max_seq_length(folder)
        self.specials = len(self._tok.encode("").ids)  # [CLS] and [SEP] for BERT models

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """(start, end) in characters of each word piece of ``text`` (no special tokens)."""
        return [tuple(o) for o in self._tok.encode(text, add_special_tokens=False).offsets]  # type: ignore[misc]

    def count(self, text: str) -> int:
        """Word pieces of ``text`` (no special tokens)."""
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def truncation(self, texts: Sequence[str]) -> Truncation | None:
        """What the model cuts from ``texts`` (special tokens counted, as the model counts them)."""
        if self.limit is None:
            return None
        lengths = [len(e.ids) for e in self._tok.encode_batch(list(texts))] if texts else []
        over = [n for n in lengths if n > self.limit]
        return Truncation(limit=self.limit, chunks=len(over), of=len(lengths), longest=max(lengths, default=0),
                          pieces_cut=sum(n - self.limit for n in over))


def _max_seq_length(folder: Path) -> int | None:
    try:
        data = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("max_seq_length") if isinstance(data, dict) else None
    return value if isinstance(value, int) and value > 0 else None


@lru_cache(maxsize=8)
def load_tokens(model: str) -> ModelTokens | None:
    """The tokenizer of ``model`` (a name or folder, resolved as the embedder resolves it)."""
    from retrieval_gate.embed.resolve import model_folder

    folder, _ = model_folder(model)  # the files only: the tokenizer needs no hash of the weights
    if not (folder / "tokenizer.json").is_file():
        return None
    return ModelTokens(folder)
