"""Query-only store adapters: measure the index a team already built — ``chroma:COLLECTION``,
``pgvector:TABLE``, ``qdrant:COLLECTION`` — embedding only the queries (with the suite's model,
through the embedding cache). The KB is never embedded and the collection never written.

The contract is the one every retriever keeps (``retrieve.base``): ``limit`` distinct cards.
A row's card id is its metadata's ``id_key`` (a dotted key reaches into nested metadata, as
LangChain's ``metadata.card_id`` in a Qdrant payload), or, without ``id_key``, its row id mapped
chunk → card through the KB. Each query over-fetches ``limit × overfetch`` rows, keeps each
card's first (best) row, and doubles the rows asked for while fewer than ``limit`` distinct
cards came out and the collection holds more. A case's filter is applied to each row's metadata
(``filters.matches``) inside that loop. A row without ``id_key`` fails its case with a reason
that names the key — never an id of ``None``.

Before the first query, ``check`` refuses (exit 2, ``RetrieverError``) what cannot be a
measurement: a collection that does not exist (naming the ones that do), an empty one, vectors
of another dimension than the model's, and — where the collection stores the documents' text —
a collection made with another model: ``probe`` documents are re-embedded and their median
cosine with the stored vectors must reach ``probe_min_cosine``.

Each client (``chroma_collection.py``, ``pgvector.py``, ``qdrant.py``) imports its library only when its
spec is used. The retriever's fingerprint (the results' ``config.details``) records the store,
the collection or table, its row count and the query model, so a re-indexed collection or
another model shows as a config change.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from retrieval_gate.embed.base import Embedder
from retrieval_gate.errors import RetrieverError, one_line
from retrieval_gate.filters import matches
from retrieval_gate.load import boundary
from retrieval_gate.models import RankedList
from retrieval_gate.retrieve.settings import StoreAdapterSettings


@dataclass(frozen=True)
class Row:
    """One stored vector a query found: its row id, the card id read from it (None: the row has
    no ``id_key``), a similarity (cosine for unit vectors; higher is better) and its metadata."""

    row_id: str
    card: str | None
    score: float
    metadata: Mapping[str, Any] | None = None


class StoreClient(Protocol):
    """One collection or table of a team's store, read only."""

    label: str  # "chroma:docs"
    id_label: str  # what holds the card id, for messages: "metadata key 'card_id'"
    id_option: str  # the option that names it: "id_key" (pgvector: or "id_column")

    def count(self) -> int: ...

    def dimension(self) -> int | None: ...

    def query(self, vector: np.ndarray, n: int) -> list[Row]: ...

    def sample(self, n: int) -> list[tuple[str, np.ndarray]]:
        """Up to ``n`` stored (text, vector) pairs, in a fixed order; [] when no text is stored."""
        ...

    def fingerprint(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def lookup(metadata: Mapping[str, Any] | None, key: str) -> Any:
    """``metadata[key]``, or, for a dotted key absent as such, the nested value (None when absent)."""
    if not isinstance(metadata, Mapping):
        return None
    if key in metadata:
        return metadata[key]
    value: Any = metadata
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def card_of(value: Any) -> str | None:
    """A card id read from metadata: text, or an integer taken as text; anything else is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def cosine_to_unit(stored: np.ndarray) -> np.ndarray:
    """Stored vectors as unit rows (a store may keep them unnormalised)."""
    rows = np.asarray(stored, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


class StoreRetriever:
    """``retrieve.base.Retriever`` over a ``StoreClient`` and the suite's query embedder."""

    def __init__(self, *, client: StoreClient, embedder: Embedder, overfetch: int = 3,
                 chunk_to_card: Mapping[str, str] | None = None, settings: StoreAdapterSettings | None = None):
        self.client = client
        self.embedder = embedder
        self.overfetch = max(1, overfetch)
        self.chunk_to_card = chunk_to_card
        self.settings = settings or StoreAdapterSettings()
        self.name = client.label
        self._count: int | None = None
        self._probe: dict[str, Any] | None = None

    # -- the checks before any query -----------------------------------------------------------
    def check(self) -> None:
        """Refuse an empty collection, another dimension, or another model (module docstring)."""
        self._count = self.client.count()
        if self._count == 0:
            raise RetrieverError(f"{self.name}: the collection is empty (0 rows): nothing to measure; "
                                 "check its name and that it was filled")
        self._probe = self._probe_model()

    def _probe_model(self) -> dict[str, Any]:
        ident = self.embedder.identity()
        stored_dim = self.client.dimension()
        pairs = self.client.sample(self.settings.probe) if self.settings.probe else []
        if not pairs:
            return {"documents": 0, "dimension": stored_dim}
        texts = [text for text, _ in pairs]
        mine = np.asarray(self.embedder.embed_documents(texts), dtype=np.float64)
        stored = np.stack([np.asarray(v, dtype=np.float64) for _, v in pairs])
        if stored.shape[1] != mine.shape[1]:
            raise RetrieverError(f"{self.name}: the collection holds {stored.shape[1]}-dimensional vectors and model "
                                 f"{ident.name} makes {mine.shape[1]}-dimensional ones: the collection was made "
                                 "with another model; set the suite's model to the one that built it")
        cosines = np.einsum("ij,ij->i", cosine_to_unit(stored), cosine_to_unit(mine))
        median = float(np.median(cosines))
        if median < self.settings.probe_min_cosine:
            raise RetrieverError(f"{self.name}: {len(texts)} stored documents re-embedded with model {ident.name} "
                                 "match "
                                 f"their stored vectors at a median cosine of {median:.3f} (below probe_min_cosine "
                                 f"{self.settings.probe_min_cosine:g}): the collection was made with another model "
                                 "(or another text); set the suite's model to the one that built it")
        return {"documents": len(texts), "dimension": int(stored.shape[1]), "median_cosine": round(median, 6)}

    def fingerprint(self) -> dict[str, Any]:
        ident = self.embedder.identity()
        out: dict[str, Any] = {"name": self.client.label.split(":", 1)[0], **self.client.fingerprint(),
                               "count": self._count if self._count is not None else self.client.count(),
                               "overfetch": self.overfetch, "model": ident.name, "model_sha256": ident.sha256,
                               **({"id_key": self.settings.id_key} if self.settings.id_key is not None else {})}
        if self._probe is not None:
            out["probe"] = dict(self._probe)
        return out

    # -- search --------------------------------------------------------------------------------
    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        if not queries:
            return []
        if self._count is None:
            self.check()
        vectors = np.asarray(self.embedder.embed_queries(list(queries)), dtype=np.float32)
        stored_dim = self.client.dimension()
        if stored_dim is not None and vectors.shape[1] != stored_dim:
            raise RetrieverError(f"{self.name}: the collection holds {stored_dim}-dimensional vectors and model "
                                 f"{self.embedder.identity().name} makes {vectors.shape[1]}-dimensional ones: the "
                                 "collection was made with another model; set the suite's model to the one that "
                                 "built it")
        wheres = list(filters) if filters is not None else [None] * len(queries)
        return [self._one(vectors[i], limit, wheres[i]) for i in range(len(queries))]

    def _one(self, vector: np.ndarray, limit: int, where: dict[str, Any] | None) -> RankedList:
        began = time.perf_counter()
        try:
            cards, scores = overfetch_rows(self.client.query, vector, limit=limit, overfetch=self.overfetch,
                                           total=self._count or 0, where=where, chunk_to_card=self.chunk_to_card,
                                           missing=self._missing_id)
        except _MissingId as exc:
            return RankedList(error=str(exc), latency_ms=_ms(began))
        except RetrieverError:
            raise
        except Exception as exc:  # one query's failure is counted, never raised (retrieve/base.py)
            return RankedList(error=f"{self.name}: search failed: {boundary.clip(one_line(exc))}",
                              latency_ms=_ms(began))
        return RankedList(ids=tuple(cards), scores=tuple(scores), latency_ms=_ms(began))

    def _missing_id(self, row: Row) -> _MissingId:
        if row.card is not None:  # a filter, and rows without metadata
            return _MissingId(f"{self.name}: the case has a filter and row {boundary.clip(row.row_id)!r} carries no "
                              "metadata to apply it to")
        return _MissingId(f"{self.name}: row {boundary.clip(row.row_id)!r} has no {self.client.id_label} "
                          f"(option {self.client.id_option}): its card is unknown")

    def close(self) -> None:
        self.client.close()


class _MissingId(Exception):
    pass


def overfetch_rows(query: Callable[[np.ndarray, int], list[Row]], vector: np.ndarray, *, limit: int,
                   overfetch: int, total: int, where: dict[str, Any] | None,
                   chunk_to_card: Mapping[str, str] | None,
                   missing: Callable[[Row], Exception]) -> tuple[list[str], list[float]]:
    """The best ``limit`` distinct cards and their scores: ask for ``limit × overfetch`` rows, keep
    each card's first row (rows failing ``where`` skipped), double while short and more rows exist."""
    if limit <= 0 or total <= 0:
        return [], []
    n = min(limit * max(overfetch, 1), total)
    while True:
        rows = query(vector, n)
        best: dict[str, float] = {}
        for row in rows:
            if where and row.metadata is None:
                raise missing(row)
            if where and not matches(row.metadata, where):
                continue
            if row.card is None:
                raise missing(row)
            card = chunk_to_card.get(row.card, row.card) if chunk_to_card is not None else row.card
            best.setdefault(card, row.score)
            if len(best) == limit:
                break
        if len(best) >= limit or len(rows) < n or n >= total:
            cards = list(best)[:limit]
            return cards, [best[c] for c in cards]
        n = min(n * 2, total)


def _ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000.0, 3)


def build_store_retriever(kind: str, target: str, *, settings: StoreAdapterSettings, dsn: str | None,
                          embedder: Embedder, overfetch: int,
                          chunk_to_card: Mapping[str, str] | None) -> StoreRetriever:
    """The adapter of ``kind`` (``chroma``, ``pgvector``, ``qdrant``) over ``target``, checked
    (``StoreRetriever.check``) before it is handed back."""
    client: StoreClient
    if kind == "chroma":
        from retrieval_gate.retrieve.stores.chroma_collection import ChromaClient

        client = ChromaClient(target, settings=settings)
    elif kind == "pgvector":
        from retrieval_gate.retrieve.stores.pgvector import PgvectorClient

        client = PgvectorClient(target, settings=settings, dsn=dsn)
    elif kind == "qdrant":
        from retrieval_gate.retrieve.stores.qdrant import QdrantStoreClient

        client = QdrantStoreClient(target, settings=settings)
    else:
        raise RetrieverError(f"unknown store adapter {kind!r}")
    retriever = StoreRetriever(client=client, embedder=embedder, overfetch=overfetch, chunk_to_card=chunk_to_card,
                               settings=settings)
    try:
        retriever.check()
    except BaseException:
        client.close()
        raise
    return retriever
