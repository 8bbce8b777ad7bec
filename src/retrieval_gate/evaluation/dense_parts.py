"""The dense side of one eval (shell): embedder, embedding cache and vector store, built once and
shared by every retriever that needs it (``dense``, ``hybrid``).

``DenseParts.build`` is called by the orchestrator *before* any retriever is built, and only when
some retriever spec needs an embedder; the model itself is loaded only when some text is not in
the embedding cache. It receives its slices of the suite config — the embedder's settings, the
store's, the chunking and the over-fetch — never the whole config; the store decides how it is
searched (exact or HNSW). Tests hand in fakes of ``Embedder`` and ``VectorStore`` (our interfaces).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from retrieval_gate.chunk.chunking import Chunk, ChunkSettings, chunking_fingerprint
from retrieval_gate.embed.base import Embedder
from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.embed.settings import EmbedSettings
from retrieval_gate.models import KnowledgeBase
from retrieval_gate.retrieve.dense import DenseRetriever
from retrieval_gate.store.base import ChunkIndex, SyncReport
from retrieval_gate.store.settings import StoreSettings


class EvalProgress(Protocol):
    """What the shell shows while an eval runs (stderr): stage progress and one-line notes."""

    def step(self, stage: str, done: int, total: int) -> None: ...

    def note(self, message: str) -> None: ...


class VectorStore(Protocol):
    """The store adapter the eval needs (``store.chroma.ChromaStore``)."""

    @property
    def cache_file(self) -> Path | None: ...

    def sync(self, *, chunks: Sequence[Chunk], embedder: Embedder, chunking: dict[str, Any]) -> SyncReport: ...

    def index(self, *, exact: bool | None = None) -> ChunkIndex: ...

    def fingerprint(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Silent:
    """No progress shown (the library default)."""

    def step(self, stage: str, done: int, total: int) -> None:
        pass

    def note(self, message: str) -> None:
        pass


class DenseParts:
    """The dense side of one eval, built once (``build``) and shared by every retriever that needs
    it (``dense``, ``hybrid``): one store sync, one embedder, one cache.

    Made from its settings before any input is read: the store adapter is made here too, and
    touches nothing until ``build`` (``ChromaStore`` takes its folder on first use)."""

    def __init__(self, *, embed: EmbedSettings, store: StoreSettings, chunking: ChunkSettings, overfetch: int,
                 suite: str, embedder: Embedder | None, vector_store: VectorStore | None, progress: EvalProgress,
                 cache_from: Sequence[Path] = ()):
        self.embed_settings, self.chunk_settings, self.overfetch = embed, chunking, overfetch
        self._embedder_in = embedder  # given by the caller (tests, sweep), else built in ``build``
        self._owns_store = vector_store is None
        if vector_store is None:
            from retrieval_gate.store.chroma import ChromaStore, collection_name

            vector_store = ChromaStore(store, collection=collection_name(suite), notify=progress.note,
                                       progress=progress.step)
        self.store: VectorStore = vector_store
        self.progress = progress
        self.embedder: CachedEmbedder | None = None
        self.cache: EmbeddingCache | None = None
        self.sync_report: SyncReport | None = None
        self.retriever: DenseRetriever | None = None
        self.chunking: dict[str, Any] = {}
        self.cache_from = list(cache_from)
        self.shards: dict[str, Any] | None = None  # what --cache-from brought in (embed/shards.py)

    def build(self, *, kb: KnowledgeBase, chunks: Sequence[Chunk]) -> DenseRetriever:
        """Embed ``chunks`` (through the cache) into the store; the dense retriever over it."""
        if self.retriever is not None:
            return self.retriever
        inner = self._embedder_in
        if inner is None:  # resolve first: an unknown model fails before the store is touched
            from retrieval_gate.embed.backends import embedder_for

            inner = embedder_for(self.embed_settings)
        store = self.store
        self.chunking = chunking_fingerprint(kb_format=kb.format, settings=self.chunk_settings)
        self.cache = EmbeddingCache(store.cache_file, notify=self.progress.note)
        self.embedder = CachedEmbedder(inner, self.cache, progress=self.progress.step)
        if self.cache_from:  # vectors embedded by `retrieval-gate embed --shard` jobs
            from retrieval_gate.embed.shards import import_shards

            report = import_shards(self.cache, paths=self.cache_from,
                                   spaces=[self.embedder.space("document"), self.embedder.space("query")])
            self.shards = report.as_extras()
            self.progress.note(f"cache: {report.imported} vectors from {len(report.folders)} shard folder(s)"
                               + (f"; {report.other} of another model/device/backend left out" if report.other else "")
                               + (f"; {report.bad} that failed the check (checksum, finite, unit norm) left out, "
                                  "to be embedded again" if report.bad else ""))
        self.embedder.load_ahead_for([c.text for c in chunks])  # the model loads while the store opens
        self.sync_report = store.sync(chunks=chunks, embedder=self.embedder, chunking=self.chunking)
        self.retriever = DenseRetriever(index=store.index(), embedder=self.embedder, overfetch=self.overfetch,
                                        fingerprint=self.fingerprint())
        return self.retriever

    def fingerprint(self) -> dict[str, Any]:
        """Model (name + files hash), chunking and search settings: what changes dense numbers."""
        assert self.embedder is not None
        ident = self.embedder.identity()
        return {"model": ident.name, "model_sha256": ident.sha256, "chunking": dict(self.chunking),
                "store": self.store.fingerprint()}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if self._owns_store:
            self.store.close()


def dense_extras(dense: DenseParts) -> dict[str, Any]:
    """``Results.extras`` of a dense run: what was embedded and what the store sync did."""
    assert dense.embedder is not None and dense.sync_report is not None
    extras = {"embedding": dense.embedder.stats.as_extras(), "store": dense.sync_report.as_extras()}
    if dense.shards is not None:
        extras["embedding"]["shards"] = dense.shards
    return extras
