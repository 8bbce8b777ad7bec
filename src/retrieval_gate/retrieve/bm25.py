"""BM25 over the knowledge base with bm25s (a library, not hand-written BM25).

Scoring (bm25s ``method="lucene"``, as Lucene/Anserini):

    score(q, d) = Σ_{t ∈ q} idf(t) · tf(t,d) / (tf(t,d) + k1 · (1 − b + b · |d| / avgdl))
    idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))

(Lucene ≥ 8 drops the constant (k1 + 1) factor of the textbook form: same ranking.) Lengths
count tokens after stop-word removal. A query term counts once per occurrence in the query.

Defaults reproduce Anserini's flat SciFact run: k1 = 0.9, b = 0.4, Porter stemming, Lucene's
English stop list (``bm25s`` "en", 33 words), lower-casing, and every run of word characters
as a token (single characters too, as Lucene's StandardTokenizer; bm25s' own default drops them,
which costs ~0.006 nDCG@10 on SciFact).
Documents are indexed as ``title + " " + text`` (BEIR convention). Only documents sharing at
least one term with the query are returned (score > 0), as a search engine would.

Unit → card: the index holds units (chunks, or whole cards); a ranking of units is mapped to
card ids with first-occurrence de-duplication, over-fetching ``limit × overfetch`` units and
doubling until ``limit`` distinct cards are found or the matches run out.

Filters: a case's ``filter`` masks out units whose metadata fails it (``filters.matches``) before
the top-k cut, the same predicate the dense retriever hands to Chroma.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import Stemmer

from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
from retrieval_gate.errors import UsageError
from retrieval_gate.filters import filter_key, matches
from retrieval_gate.models import KnowledgeBase, RankedList
from retrieval_gate.retrieve.settings import BM25Settings

# Language → (default stemmer, bm25s stop list). English uses Porter (as Lucene's
# PorterStemFilter) rather than Snowball "english" (Porter2), to match the published figures.
_LANGUAGES = {
    "english": ("porter", "en"), "en": ("porter", "en"),
    "portuguese": ("portuguese", "pt"), "pt": ("portuguese", "pt"),
    "spanish": ("spanish", "es"), "es": ("spanish", "es"),
    "french": ("french", "fr"), "fr": ("french", "fr"),
    "german": ("german", "de"), "de": ("german", "de"),
    "italian": ("italian", "it"), "it": ("italian", "it"),
    "dutch": ("dutch", "nl"), "nl": ("dutch", "nl"),
    "swedish": ("swedish", "sv"), "sv": ("swedish", "sv"),
    "norwegian": ("norwegian", "no"), "no": ("norwegian", "no"),
    "danish": ("danish", "da"), "da": ("danish", "da"),
    "russian": ("russian", "ru"), "ru": ("russian", "ru"),
    "turkish": ("turkish", "tr"), "tr": ("turkish", "tr"),
}
_STOPWORD_ALIASES = {"lucene": "en", "english": "en", "english_plus": "en_plus"}


@dataclass(frozen=True)
class IndexUnit:
    """One indexed text: a chunk or a whole card, and the card it belongs to."""

    id: str
    card_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


def resolved(settings: BM25Settings) -> tuple[str, tuple[str, ...] | str]:
    """(stemmer algorithm or "none", stop words) after applying the language defaults."""
    lang = _LANGUAGES.get(settings.language.lower())
    if lang is None and (settings.stemmer is None or settings.stopwords is None):
        known = ", ".join(sorted(k for k in _LANGUAGES if len(k) > 2))
        raise UsageError(f"bm25 language {settings.language!r} has no defaults (known: {known}); "
                         "set bm25_stemmer and bm25_stopwords explicitly")
    stemmer = settings.stemmer if settings.stemmer is not None else lang[0]  # type: ignore[index]
    stop = settings.stopwords if settings.stopwords is not None else lang[1]  # type: ignore[index]
    if isinstance(stop, str):
        stop = _STOPWORD_ALIASES.get(stop.lower(), stop.lower())
    return stemmer.lower(), stop


def _make_stemmer(name: str) -> Any:
    if name in ("none", ""):
        return None

    if name not in Stemmer.algorithms():
        raise UsageError(f"bm25 stemmer {name!r} is unknown (PyStemmer has: {', '.join(Stemmer.algorithms())}, "
                         "or 'none')")
    return Stemmer.Stemmer(name)


def _stop_list(stop: tuple[str, ...] | str) -> list[str]:
    if isinstance(stop, tuple):
        return [w.lower() for w in stop]
    if stop == "none":
        return []
    from bm25s.tokenization import _infer_stopwords

    try:
        return list(_infer_stopwords(stop))
    except ValueError:
        raise UsageError(f"bm25 stop words {stop!r} are unknown (use a language such as en, pt, es, "
                         "'lucene', 'en_plus', 'none', or a list of words)") from None


def units_from_kb(kb: KnowledgeBase, chunking: ChunkSettings | None = None) -> list[IndexUnit]:
    """The units to index: the same chunks the dense retriever embeds (``chunk/chunking.py``) —
    a record KB (JSONL, BEIR) gives one unit per record, ``title + " " + text``; a Markdown KB
    gives its heading/size chunks. Each unit carries its card id and its card's (scalar) metadata."""
    return [IndexUnit(id=c.id, card_id=c.parent_id, text=c.text, metadata=c.metadata)
            for c in chunk_kb(kb, settings=chunking or ChunkSettings())]


def top_cards(
    scores: np.ndarray, unit_cards: Sequence[str], limit: int, overfetch: int = 3
) -> tuple[list[str], list[float]]:
    """The best ``limit`` distinct cards from unit scores (only scores > 0 count).

    Take the top ``limit × overfetch`` units (score descending, ties by index order), map them
    to cards keeping each card's first (best) occurrence; if fewer than ``limit`` distinct cards
    came out and more matching units exist, double the depth and repeat.
    """
    positive = np.flatnonzero(scores > 0)
    if limit <= 0 or positive.size == 0:
        return [], []
    depth = max(limit * max(overfetch, 1), 1)
    while True:
        if depth >= positive.size:
            chosen = positive
        else:
            part = np.argpartition(-scores[positive], depth - 1)[:depth]
            chosen = positive[part]
        order = chosen[np.lexsort((chosen, -scores[chosen]))]
        ids: list[str] = []
        best: list[float] = []
        seen: set[str] = set()
        for index in order:
            card = unit_cards[int(index)]
            if card in seen:
                continue
            seen.add(card)
            ids.append(card)
            best.append(float(scores[index]))
            if len(ids) == limit:
                return ids, best
        if chosen.size == positive.size:
            return ids, best
        depth *= 2


class BM25Retriever:
    """BM25 behind the ``Retriever`` contract (``retrieve/base.py``)."""

    name = "bm25"

    def __init__(self, *, units: Sequence[IndexUnit], settings: BM25Settings | None = None, overfetch: int = 3):
        import bm25s

        if not units:
            raise UsageError("bm25: nothing to index (the knowledge base is empty)")
        self.settings = settings or BM25Settings()
        self.overfetch = overfetch
        self._stemmer_name, stop = resolved(self.settings)
        self._stemmer = _make_stemmer(self._stemmer_name)
        self._stopwords = _stop_list(stop)
        self._units = list(units)
        self._unit_cards = [u.card_id for u in self._units]
        self._masks: dict[str, np.ndarray] = {}
        started = time.perf_counter()
        tokens = self._tokenize([u.text for u in self._units], return_ids=True)
        self._index = bm25s.BM25(k1=self.settings.k1, b=self.settings.b, method="lucene")
        self._index.index(tokens, show_progress=False)
        self.index_seconds = time.perf_counter() - started

    def _tokenize(self, texts: list[str], *, return_ids: bool) -> Any:
        import bm25s

        return bm25s.tokenize(texts, lower=True, stopwords=self._stopwords,
                              stemmer=self._stemmer.stemWords if self._stemmer else None,
                              token_pattern=self.settings.token_pattern, return_ids=return_ids,
                              show_progress=False)

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "k1": self.settings.k1, "b": self.settings.b, "method": "lucene",
                "stemmer": self._stemmer_name, "stopwords": len(self._stopwords),
                "token_pattern": self.settings.token_pattern,
                "units": len(self._units)}

    def _mask(self, where: Mapping[str, Any] | None) -> np.ndarray | None:
        if not where:
            return None
        key = filter_key(where)
        if key not in self._masks:
            self._masks[key] = np.fromiter((matches(u.metadata, where=where) for u in self._units),
                                           dtype=bool, count=len(self._units))
        return self._masks[key]

    def scores(self, query: str, where: Mapping[str, Any] | None = None) -> np.ndarray:
        """BM25 score of every unit for ``query`` (0 for units the filter removes)."""
        tokens = self._tokenize([query], return_ids=False)[0]
        ids = self._index.get_tokens_ids(tokens)
        if not ids:
            return np.zeros(len(self._units), dtype=np.float32)
        scores = np.asarray(self._index.get_scores_from_ids(ids), dtype=np.float32)
        mask = self._mask(where)
        if mask is not None:
            scores = np.where(mask, scores, np.float32(0.0))
        return scores

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        wheres = list(filters) if filters is not None else [None] * len(queries)
        if len(wheres) != len(queries):
            raise ValueError("filters must align with queries")
        out: list[RankedList] = []
        for query, where in zip(queries, wheres, strict=True):
            started = time.perf_counter()
            try:
                ids, best = top_cards(self.scores(query, where), self._unit_cards, limit,
                                      self.overfetch)
            except Exception as exc:  # one bad query is that case's failure, not the run's
                out.append(RankedList(error=f"bm25: {type(exc).__name__}: {exc}"))
                continue
            out.append(RankedList(ids=tuple(ids), scores=tuple(best),
                                  latency_ms=(time.perf_counter() - started) * 1000.0))
        return out
