"""Cross-encoder reranking of a base retriever's top-N cards (sentence-transformers CrossEncoder).

For each query the base retriever returns ``max(top_n, limit)`` distinct cards; the first
``top_n`` are scored by the cross-encoder on ``(query, card text)`` pairs and re-sorted by that
score (descending, ties keep the base order); cards past ``top_n`` follow in base order. The
result is cut at ``limit``. Scores are the cross-encoder's when every returned card was
reranked, else omitted (two scales must not share one list).

Compare with and without the reranker over identical candidate sets: run ``X`` and ``X+rerank``
side by side and read the paired ΔnDCG (docs/decisions.md).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from retrieval_gate.errors import RetrieverError
from retrieval_gate.models import KnowledgeBase, RankedList
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.settings import DEFAULT_TOP_N


class PairScorer(Protocol):
    """What the reranker needs from a cross-encoder: one score per (query, text) pair."""

    def predict(self, inputs: list[tuple[str, str]], *, batch_size: int = 32,
                show_progress_bar: bool | None = None) -> Any: ...


def card_texts(kb: KnowledgeBase) -> dict[str, str]:
    """Card id → the text a reranker reads: title, then the texts of the card's entries in KB
    order (a card split into several entries is read as one)."""
    parts: dict[str, list[str]] = {}
    for card in kb.cards:
        bucket = parts.setdefault(card.card_id, [])
        if card.title and not bucket:
            bucket.append(card.title)
        bucket.append(card.text)
    return {cid: " ".join(texts) for cid, texts in parts.items()}


def rerank_order(ids: Sequence[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    """``ids`` sorted by score, best first; equal scores keep their input order."""
    return sorted(zip(ids, (float(s) for s in scores), strict=True), key=lambda p: -p[1])


def load_cross_encoder(name_or_path: str, *, device: str | None = None,
                       max_length: int | None = None) -> Any:
    """A sentence-transformers ``CrossEncoder`` from a hub name or a local folder. A plain BERT
    / sentence-transformers checkpoint loads too (with an untrained one-logit head: a working
    code path, not a quality figure). Raises ``RetrieverError`` with the reason; without torch
    (the action's default image) ``NeedsTorchError``, naming the full image variant."""
    from retrieval_gate.embed.runtime import require_torch

    require_torch(f"the cross-encoder rerank ({name_or_path})")
    try:
        from sentence_transformers import CrossEncoder

        return CrossEncoder(name_or_path, device=device, max_length=max_length, num_labels=1)
    except Exception as exc:
        raise RetrieverError(
            f"cannot load cross-encoder {name_or_path!r}: {type(exc).__name__}: {exc}. "
            "Offline, give a local folder (options.rerank_model)"
        ) from None


class RerankRetriever:
    """``base`` followed by a cross-encoder over its top ``top_n`` cards."""

    def __init__(self, *, base: Retriever, scorer: PairScorer, texts: Mapping[str, str],
                 model_name: str, top_n: int = DEFAULT_TOP_N, batch_size: int = 32):
        if top_n <= 0:
            raise ValueError("rerank top_n must be positive")
        self.base = base
        self.scorer = scorer
        self.texts = texts
        self.model_name = model_name
        self.top_n = top_n
        self.batch_size = batch_size
        self.name = f"{base.name}+rerank"

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "top_n": self.top_n,
                "base": self.base.fingerprint()}

    def _rerank_one(self, query: str, answer: RankedList, limit: int) -> RankedList:
        if answer.error:
            return answer
        head, tail = list(answer.ids[: self.top_n]), list(answer.ids[self.top_n :])
        if not head:
            return answer
        missing = [c for c in head if c not in self.texts]
        if missing:
            return RankedList(error=f"rerank: no text for card {missing[0]!r}")
        started = time.perf_counter()
        try:
            raw = self.scorer.predict([(query, self.texts[c]) for c in head],
                                      batch_size=self.batch_size, show_progress_bar=False)
        except Exception as exc:
            return RankedList(error=f"rerank: {type(exc).__name__}: {exc}")
        ms = (time.perf_counter() - started) * 1000.0
        ordered = rerank_order(head, [float(s) for s in raw])
        ids = [c for c, _ in ordered] + tail
        ids = ids[:limit]
        scores = tuple(s for _, s in ordered[:limit]) if len(ids) <= len(ordered) else None
        latency = ms + (answer.latency_ms or 0.0)
        return RankedList(ids=tuple(ids), scores=scores, latency_ms=latency)

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        answers = self.base.search(queries, max(self.top_n, limit), filters)
        return [self._rerank_one(q, a, limit) for q, a in zip(queries, answers, strict=True)]
