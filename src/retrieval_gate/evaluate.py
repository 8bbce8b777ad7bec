"""The eval orchestrator: KB + cases → chunks → embeddings → store → retriever → the same
scoring path as ``score`` (``pipeline.assemble_results``).

``run_eval`` receives its adapters (embedder, store, progress) so tests can hand it fakes of our
interfaces; by default it builds the sentence-transformers embedder and the Chroma store from
the settings. Retrievers come from ``retrieve.factory.RetrieverBuilder`` keyed on
``config.retriever``; the dense part (store sync, embedder) is built only when a retriever asks
for it, and the model is loaded only when some text is not in the embedding cache.

Order of work: load and check the inputs (integrity first: a bad gold id stops the run before
anything is embedded) → build the retriever(s) → rank every case (no-answer cases too: they are
scored as abstention when a threshold is set) → score and aggregate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from retrieval_gate.embed.base import Embedder
from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.errors import UsageError
from retrieval_gate.load.cases import CaseSet
from retrieval_gate.load.dataset import load_dataset
from retrieval_gate.load.kb import KnowledgeBase
from retrieval_gate.metrics import MEASURES_ALL, metric_grid
from retrieval_gate.models import RankedList
from retrieval_gate.pipeline import assemble_results
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.custom import RunRetriever
from retrieval_gate.retrieve.dense import DenseRetriever
from retrieval_gate.retrieve.factory import RetrieverBuilder, RetrieverSpec, parse_retrievers
from retrieval_gate.retrieve.filters import false_exclusion_extras
from retrieval_gate.score.results import Results
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.base import ChunkIndex, SyncReport
from retrieval_gate.store.chunking import Chunk, chunk_kb, chunking_fingerprint


class EvalProgress(Protocol):
    """What the shell shows while an eval runs (stderr): stage progress and one-line notes."""

    def step(self, stage: str, done: int, total: int) -> None: ...

    def note(self, message: str) -> None: ...


class VectorStore(Protocol):
    """The store adapter ``run_eval`` needs (``store.chroma.ChromaStore``)."""

    @property
    def cache_file(self) -> Path | None: ...

    def sync(self, *, chunks: Sequence[Chunk], embedder: Embedder, chunking: dict[str, Any]) -> SyncReport: ...

    def index(self, *, exact: bool | None = None) -> ChunkIndex: ...

    def fingerprint(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class _Silent:
    def step(self, stage: str, done: int, total: int) -> None:
        pass

    def note(self, message: str) -> None:
        pass


class DenseParts:
    """The dense side of one eval, built on first use and shared by every retriever that needs
    it (``dense``, ``hybrid``): one store sync, one embedder, one cache."""

    def __init__(self, *, config: SuiteConfig, suite: str, kb: KnowledgeBase, chunks: Sequence[Chunk],
                 embedder: Embedder | None, store: VectorStore | None, progress: EvalProgress):
        self.config = config
        self.suite = suite
        self.kb = kb
        self.chunks = chunks
        self._embedder_in = embedder
        self._store_in = store
        self.progress = progress
        self.store: VectorStore | None = None
        self.embedder: CachedEmbedder | None = None
        self.cache: EmbeddingCache | None = None
        self.sync_report: SyncReport | None = None
        self.retriever: DenseRetriever | None = None
        self.chunking = chunking_fingerprint(kb_format=kb.format, settings=config.chunking)

    def build(self) -> DenseRetriever:
        if self.retriever is not None:
            return self.retriever
        inner = self._embedder_in
        if inner is None:  # resolve first: an unknown model fails before the store is touched
            from retrieval_gate.embed.resolve import resolve_model
            from retrieval_gate.embed.sentence import SentenceTransformerEmbedder

            inner = SentenceTransformerEmbedder(resolve_model(self.config.model), batch_size=self.config.batch_size)
        store = self._store_in
        if store is None:
            from retrieval_gate.store.chroma import ChromaStore, collection_name

            store = ChromaStore(self.config.store, collection=collection_name(self.suite),
                                notify=self.progress.note, progress=self.progress.step)
        self.store = store
        self.cache = EmbeddingCache(store.cache_file, notify=self.progress.note)
        self.embedder = CachedEmbedder(inner, self.cache, progress=self.progress.step)
        self.sync_report = store.sync(chunks=self.chunks, embedder=self.embedder, chunking=self.chunking)
        self.retriever = DenseRetriever(index=store.index(exact=self.config.store.exact), embedder=self.embedder,
                                        overfetch=self.config.overfetch, fingerprint=self.fingerprint())
        return self.retriever

    def fingerprint(self) -> dict[str, Any]:
        """Model (name + files hash), chunking and search settings: what changes dense numbers."""
        assert self.embedder is not None and self.store is not None
        ident = self.embedder.identity()
        return {"model": ident.name, "model_sha256": ident.sha256, "chunking": dict(self.chunking),
                "store": self.store.fingerprint()}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if self.store is not None and self._store_in is None:
            self.store.close()


def load_inputs(config: SuiteConfig) -> tuple[KnowledgeBase, CaseSet]:
    """Load the KB and the cases and run the integrity check (every gold id is a KB card)."""
    if not config.kb or not config.cases:
        missing = " and ".join(n for n, v in (("--kb", config.kb), ("--cases", config.cases)) if not v)
        raise UsageError(f"eval needs {missing} (or kb:/cases: in the suite of retrieval-gate.yml)")
    case_set, kb = load_dataset(cases=Path(config.cases), kb=Path(config.kb))
    assert kb is not None
    return kb, case_set


def run_eval(*, config: SuiteConfig, suite: str, embedder: Embedder | None = None,
             store: VectorStore | None = None, progress: EvalProgress | None = None,
             created_at: str | None = None) -> Results:
    """Measure the one retriever ``config.retriever`` names (see ``run_evals`` for several)."""
    specs = parse_retrievers(config.retriever)
    if len(specs) != 1:
        raise UsageError(f"run_eval measures one retriever, got {len(specs)} ({config.retriever}); "
                         "use run_evals")
    return next(iter(run_evals(config=config, suite=suite, embedder=embedder, store=store, progress=progress,
                               created_at=created_at).values()))


def run_evals(*, config: SuiteConfig, suite: str, embedder: Embedder | None = None,
              store: VectorStore | None = None, progress: EvalProgress | None = None,
              created_at: str | None = None) -> dict[str, Results]:
    """One Results per retriever spec in ``config.retriever`` (comma-separated), in order, keyed
    by spec name; the parts (embeddings, store, BM25 index) are built once and shared."""
    began = time.perf_counter()
    progress = progress or _Silent()
    specs = parse_retrievers(config.retriever)
    kb, case_set = load_inputs(config)
    chunks = chunk_kb(kb, config.chunking)
    loaded_s = time.perf_counter() - began
    dense = DenseParts(config=config, suite=suite, kb=kb, chunks=chunks, embedder=embedder, store=store,
                       progress=progress)
    builder = RetrieverBuilder(kb=kb, options=config.options, overfetch=config.overfetch, dense=dense.build,
                               cases=case_set.cases, bm25_units=_bm25_units(chunks, specs))
    ks = config.k
    grid = metric_grid(ks, config.metrics or MEASURES_ALL)
    queries = [c.query for c in case_set.cases]
    filters = [c.filter for c in case_set.cases]
    false_exclusion = false_exclusion_extras(cases=case_set.cases, units=[(c.parent_id, c.metadata) for c in chunks])
    out: dict[str, Results] = {}
    try:
        for spec in specs:
            spec_began = time.perf_counter()
            retriever = builder.build(spec)
            built_s = time.perf_counter() - spec_began
            search_began = time.perf_counter()
            ranked = (retriever.search_cases([c.id for c in case_set.cases], max(ks))  # run files: by case id
                      if isinstance(retriever, RunRetriever) else retriever.search(queries, max(ks), filters))
            search_s = time.perf_counter() - search_began
            rankings = _by_case(case_set, ranked, retriever)
            extras: dict[str, Any] = {}
            config_out: dict[str, Any] = {"retriever": spec.name, "k": list(ks), "overfetch": config.overfetch}
            if dense.retriever is not None and spec.needs_embedder:  # bm25/custom results carry no model
                config_out.update(dense.fingerprint())
                extras.update(_dense_extras(dense))
            if false_exclusion is not None:
                extras["filter_false_exclusion"] = false_exclusion
            if retriever is not dense.retriever:  # hybrid, bm25, custom: their own parameters
                config_out["details"] = retriever.fingerprint()
            extras["timings"] = {"load_s": round(loaded_s, 3), "build_s": round(built_s, 3),
                                 "search_s": round(search_s, 3)}
            results = assemble_results(case_set=case_set, rankings=rankings, metrics=grid, ks=ks, kb=kb,
                                       suite=suite, config=config_out, headline_k=config.headline_k,
                                       created_at=created_at, abstain_threshold=config.abstain_threshold,
                                       extras=extras)
            if config.store.ann_check and retriever is dense.retriever:
                results.extras["ann_check"] = ann_check(dense=dense, case_set=case_set, kb=kb, queries=queries,
                                                        filters=filters, main=results, grid=grid, ks=ks)
            results.extras["timings"]["total_s"] = round(time.perf_counter() - began, 3)
            out[spec.name] = results
    finally:
        dense.close()
    return out


def _by_case(case_set: CaseSet, ranked: Sequence[RankedList], retriever: Retriever) -> dict[str, RankedList]:
    if len(ranked) != len(case_set.cases):
        raise UsageError(f"retriever {retriever.name!r} answered {len(ranked)} of {len(case_set.cases)} queries")
    return {case.id: r for case, r in zip(case_set.cases, ranked, strict=True)}


def _bm25_units(chunks: Sequence[Chunk], specs: Sequence[RetrieverSpec]) -> list[Any] | None:
    """BM25 indexes the same chunks the dense retriever embeds."""
    if not any(s.kind in ("bm25", "hybrid") for s in specs):
        return None
    from retrieval_gate.retrieve.bm25 import IndexUnit

    return [IndexUnit(id=c.id, card_id=c.parent_id, text=c.text, metadata=c.metadata) for c in chunks]


def _dense_extras(dense: DenseParts) -> dict[str, Any]:
    assert dense.embedder is not None and dense.sync_report is not None
    return {"embedding": dense.embedder.stats.as_extras(), "store": dense.sync_report.as_extras()}


def ann_check(*, dense: DenseParts, case_set: CaseSet, kb: KnowledgeBase, queries: Sequence[str],
              filters: Sequence[dict[str, Any] | None], main: Results, grid: Any, ks: Sequence[int]) -> dict[str, Any]:
    """How far the HNSW index is from exact search on this run.

        recall@K = mean over queries of |top-K cards (HNSW) ∩ top-K cards (exact)| / |top-K cards (exact)|

    with K = the largest k; plus both runs' overall headline metrics and their difference
    (HNSW − exact), so a reader sees whether index noise could move a gate."""
    assert dense.retriever is not None and dense.store is not None and dense.embedder is not None
    main_is_exact = dense.retriever.index.name == "exact"
    other = DenseRetriever(index=dense.store.index(exact=not main_is_exact), embedder=dense.embedder,
                           overfetch=dense.config.overfetch)
    k = max(ks)
    vectors = dense.embedder.embed_queries(list(queries))
    other_ranked = other.rank(vectors, k, filters)
    main_ranked = [main_case.retrieved[:k] for main_case in main.cases]
    exact_lists = [list(r.ids[:k]) for r in other_ranked] if not main_is_exact else main_ranked
    hnsw_lists = main_ranked if not main_is_exact else [list(r.ids[:k]) for r in other_ranked]
    recalls = [len(set(h) & set(e)) / len(e) for h, e in zip(hnsw_lists, exact_lists, strict=True) if e]
    differing = sum(1 for h, e in zip(hnsw_lists, exact_lists, strict=True) if list(h) != list(e))
    other_results = assemble_results(case_set=case_set, rankings={c.id: r for c, r in zip(case_set.cases, other_ranked,
                                                                                            strict=True)},
                                     metrics=grid, ks=ks, kb=kb)
    exact_res, hnsw_res = (main, other_results) if main_is_exact else (other_results, main)
    hk = main.headline_k
    names = [f"{m}@{hk}" for m in ("hit", "recall", "ndcg") if f"{m}@{hk}" in main.metrics]
    overall_e = exact_res.aggregates.get("overall", {})
    overall_h = hnsw_res.aggregates.get("overall", {})
    return {
        "k": k,
        "recall": round(sum(recalls) / len(recalls), 6) if recalls else None,
        "queries": len(recalls),
        "queries_differing": differing,
        "exact": {n: overall_e[n].value for n in names if n in overall_e},
        "hnsw": {n: overall_h[n].value for n in names if n in overall_h},
        "delta": {n: round(overall_h[n].value - overall_e[n].value, 6) for n in names
                  if n in overall_h and n in overall_e},
    }
