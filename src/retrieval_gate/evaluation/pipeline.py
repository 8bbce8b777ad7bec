"""The one pipeline builder: a suite's parts from its settings, then its inputs, then its retrievers —
load → chunk → dense parts (embedder, cache, store) → retrievers.

``eval`` (``evaluation.run.run_evals``), the sweep (``run_evals`` per point over ``prepare``'s shared
inputs), ``embed --shard`` (``prepare``) and ``cases draft`` (``golden.cases_draft``) build through it,
so a part is wired once:

1. ``Pipeline(...)``: the dense parts from their settings when some retriever needs an embedder (or
   the caller embeds queries itself, ``dense=True``); nothing is read or touched yet (the store's
   adapter starts importing chromadb on a second thread, ``store.chroma``);
2. ``prepare`` (or the caller's own load): the KB and the cases, integrity first, and the chunks in
   the suite's unit;
3. ``Pipeline.build(kb=…, chunks=…)``: the dense side built (model, store folder, embeddings through
   the cache, store sync), then a ``RetrieverBuilder`` that builds each spec and shares parts between
   specs (the BM25 units when some spec needs them).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from retrieval_gate.chunk.chunking import Chunk
from retrieval_gate.embed.base import Embedder
from retrieval_gate.errors import UsageError
from retrieval_gate.evaluation.chunks import suite_chunks
from retrieval_gate.evaluation.dense_parts import DenseParts, EvalProgress, Silent, VectorStore
from retrieval_gate.load.dataset import load_dataset
from retrieval_gate.models import Case, CaseSet, KnowledgeBase
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.factory import RetrieverBuilder
from retrieval_gate.retrieve.spec import RetrieverSpec
from retrieval_gate.settings import SuiteConfig


def input_paths(suite_config: SuiteConfig) -> tuple[Path, Path]:
    """The KB and cases paths of the suite (a usage error when either is missing)."""
    if not suite_config.kb or not suite_config.cases:
        missing = " and ".join(n for n, v in (("--kb", suite_config.kb), ("--cases", suite_config.cases)) if not v)
        raise UsageError(f"eval needs {missing} (or kb:/cases: in the suite of retrieval-gate.yml)")
    return Path(suite_config.kb), Path(suite_config.cases)


def load_inputs(*, kb: Path, cases: Path) -> tuple[KnowledgeBase, CaseSet]:
    """Load the KB and the cases and run the integrity check (every gold id is a KB card or was
    one: a gold id naming no card is scored as a loss, ``gold-removed``; one naming a chunk is refused)."""
    case_set, knowledge = load_dataset(cases=cases, kb=kb, missing_gold="score")
    if case_set.format == "qrels":
        raise UsageError(f"eval needs query text, and {case_set.path} is a bare qrels file: give a BEIR "
                         "folder (queries.jsonl + qrels) or JSONL cases (a qrels file serves `score`)")
    assert knowledge is not None
    return knowledge, case_set


def load_eval_inputs(suite_config: SuiteConfig) -> tuple[KnowledgeBase, CaseSet]:
    """``load_inputs`` of the suite's KB and cases."""
    kb, cases = input_paths(suite_config)
    return load_inputs(kb=kb, cases=cases)


@dataclass
class Prepared:
    """What several evals of one suite over the same inputs and chunking share (the sweep): the
    loaded KB and cases, the chunks, what the model cuts, and the BM25 index (by its settings)
    — each made once. Handed to ``run_evals`` by a caller that made it for that suite config."""

    kb: KnowledgeBase
    case_set: CaseSet
    chunks: tuple[Chunk, ...]
    truncation: dict[str, Any] | None = None
    truncation_known: bool = False
    bm25: dict[str, Any] = field(default_factory=dict)


def prepare(suite_config: SuiteConfig, *, loaded: tuple[KnowledgeBase, CaseSet] | None = None) -> Prepared:
    """The suite's inputs (``loaded`` when the caller already holds them) and their chunks."""
    kb, case_set = loaded if loaded is not None else load_eval_inputs(suite_config)
    return Prepared(kb=kb, case_set=case_set,
                    chunks=suite_chunks(kb, chunking=suite_config.chunking, model=suite_config.model))


def bm25_units(chunks: Sequence[Chunk], specs: Sequence[RetrieverSpec]) -> list[Any] | None:
    """BM25 indexes the same chunks the dense retriever embeds (None when no spec needs BM25)."""
    if not any(s.kind in ("bm25", "hybrid") for s in specs):
        return None
    from retrieval_gate.retrieve.bm25 import IndexUnit

    return [IndexUnit(id=c.id, card_id=c.parent_id, text=c.text, metadata=c.metadata) for c in chunks]


class Pipeline:
    """A suite's parts, built once and closed once (a context manager). ``dense``: build the dense
    side even when no spec needs it (``cases draft`` embeds its queries); by default, when some does."""

    def __init__(self, *, suite_config: SuiteConfig, suite: str, specs: Sequence[RetrieverSpec],
                 embedder: Embedder | None = None, store: VectorStore | None = None,
                 progress: EvalProgress | None = None, cache_from: Sequence[Path] = (), dense: bool = False):
        self.suite_config = suite_config
        self.specs = list(specs)
        self.progress = progress or Silent()
        needed = dense or any(s.needs_embedder for s in self.specs)
        self.dense = (DenseParts(embed=suite_config.embed, store=suite_config.store, chunking=suite_config.chunking,
                                 overfetch=suite_config.overfetch, suite=suite, embedder=embedder, vector_store=store,
                                 progress=self.progress, cache_from=cache_from)
                      if needed else None)
        self.dense_retriever: Retriever | None = None
        self.dense_s = 0.0  # how long the dense side took to build
        self._embedder_in = embedder
        self._query_parts: list[Any] = []  # the store adapters' query embedder: its store folder and cache
        self._query_embedder: Embedder | None = None
        self._builder: RetrieverBuilder | None = None

    def build(self, *, kb: KnowledgeBase, chunks: Sequence[Chunk], cases: Sequence[Case] = (),
              bm25_built: dict[str, Any] | None = None) -> RetrieverBuilder:
        """The dense side built over ``chunks`` (when there is one), then the builder of the specs'
        retrievers (``cases``: what a ``python:`` retriever may be handed; ``bm25_built``: the BM25
        indexes an earlier eval over the same chunks made)."""
        began = time.perf_counter()
        if self.dense is not None:
            self.dense_retriever = self.dense.build(kb=kb, chunks=chunks)
        self.dense_s = time.perf_counter() - began
        self._builder = RetrieverBuilder(kb=kb, options=self.suite_config.options,
                                         overfetch=self.suite_config.overfetch, dense=self.dense_retriever, cases=cases,
                                         bm25_units=bm25_units(chunks, self.specs), bm25_built=bm25_built,
                                         query_embedder=self.query_embedder,
                                         dsn=self.suite_config.resolved_option("dsn"))
        return self._builder

    def query_embedder(self) -> Embedder:
        """The store adapters' query embedder (``retrieve.stores``): the dense side's when there is
        one, else the suite's model behind the embedding cache of the suite's store folder — the
        KB is never embedded."""
        if self.dense is not None and self.dense.embedder is not None:
            return self.dense.embedder
        if self._query_embedder is None:
            from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
            from retrieval_gate.evaluation.query_cache import QueryCacheFolder

            inner = self._embedder_in
            if inner is None:
                from retrieval_gate.embed.backends import embedder_for

                inner = embedder_for(self.suite_config.embed)
            folder = QueryCacheFolder(self.suite_config.store, notify=self.progress.note, progress=self.progress.step)
            self._query_parts.append(folder)
            cache = EmbeddingCache(folder.cache_file, notify=self.progress.note)
            self._query_parts.append(cache)
            self._query_embedder = CachedEmbedder(inner, cache, progress=self.progress.step)
        return self._query_embedder

    def close(self) -> None:
        if self._builder is not None:
            self._builder.close()
        while self._query_parts:
            self._query_parts.pop().close()
        if self.dense is not None:
            self.dense.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
