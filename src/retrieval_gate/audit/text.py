"""Text normalisation and shingling (pure, deterministic across processes and machines).

Words are Unicode ``\\w+`` runs of the case-folded text. A word is hashed to 32 bits with
BLAKE2b (never Python's ``hash``, which changes between processes); a shingle of ``size``
consecutive words is hashed by combining its words' hashes (a polynomial over 2**32), so a card
is shingled with a few numpy operations instead of one Python call per shingle. A text shorter
than ``size`` words is one shingle of all its words; an empty text has none.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from operator import itemgetter

import numpy as np

_WORD = re.compile(r"\w+")
_MASK = np.uint64(0xFFFFFFFF)
_MUL = np.uint64(1_000_003)


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def normalise(text: str) -> str:
    """Case-folded words joined by one space: what "the same query" means here."""
    return " ".join(words(text))


def hash32(token: str) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "little")


class WordHasher:
    """Hashes words to 32 bits, remembering the words it has seen (a corpus repeats them)."""

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def __call__(self, tokens: Sequence[str]) -> np.ndarray:
        if not tokens:
            return np.zeros(0, dtype=np.uint64)
        cache = self._cache
        if len(tokens) == 1:  # itemgetter of one key returns the value, not a tuple
            token = tokens[0]
            if token not in cache:
                cache[token] = hash32(token)
            return np.array([cache[token]], dtype=np.uint64)
        try:
            return np.array(itemgetter(*tokens)(cache), dtype=np.uint64)
        except KeyError:  # new words: hash them once (a corpus soon stops having new words)
            for token in set(tokens).difference(cache):
                cache[token] = hash32(token)
            return np.array(itemgetter(*tokens)(cache), dtype=np.uint64)


def shingle_hashes(word_hashes: np.ndarray, size: int) -> np.ndarray:
    """The sorted distinct hashes of every run of ``size`` consecutive words."""
    n = len(word_hashes)
    if n == 0:
        return np.zeros(0, dtype=np.uint32)
    width = min(size, n)
    count = n - width + 1
    h = np.zeros(count, dtype=np.uint64)
    for j in range(width):
        h = ((h * _MUL) + word_hashes[j:j + count]) & _MASK
    return np.unique(h).astype(np.uint32)


def char_shingles(text: str, size: int) -> np.ndarray:
    """The sorted distinct hashes of the character ``size``-grams of the normalised text."""
    norm = normalise(text)
    if not norm:
        return np.zeros(0, dtype=np.uint32)
    grams = {norm} if len(norm) <= size else {norm[i:i + size] for i in range(len(norm) - size + 1)}
    return np.unique(np.array([hash32(g) for g in grams], dtype=np.uint32))


