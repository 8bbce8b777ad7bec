"""Running a sweep's points (shell): one eval per point through ``evaluation.run.run_evals``, the
same path as ``retrieval-gate eval``, with the parts shared where the settings allow.

- One embedder per model (loaded once for the whole sweep), counted: ``embedded`` is what the
  model was really asked to embed for the point, everything else came from the cache.
- The embedding cache is content-addressed (one vector per model and text): a chunk text two
  chunkings both produce is embedded once. A persistent store keeps it, so a rerun embeds nothing;
  an ephemeral store gets one in-memory cache for the whole sweep.
- One store collection per index-time group (``rg-<suite>-sweep-<hash>``): the group's points
  (query-time variants) search the one build; a rerun finds it built.
- The KB and the cases are loaded and checked once for the whole sweep, chunked once per
  chunking, the truncation counted once per chunking and BM25 built once per chunking and BM25
  settings (``evaluation.pipeline.Prepared``).
- With a persistent store, each point's run is kept under its full fingerprint
  (``sweep.cache``): an unchanged rerun reads every point back, verified, and runs nothing.

Each point comes back as a ``PointRun``: its settings, per-case scores of the measures the
statistics use, the overall means, its chunk count and the hashes of the texts it embeds (so the
deterministic ``embedded`` figure of ``sweep.json`` can be worked out however the points were
shared between machines), and how long it took.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrieval_gate.baseline.model import DECIMALS
from retrieval_gate.compare.side_by_side import default_metrics
from retrieval_gate.embed.base import Embedder, ModelIdentity
from retrieval_gate.errors import InputError, Problem
from retrieval_gate.evaluation.chunks import truncation_line
from retrieval_gate.evaluation.dense_parts import EvalProgress, Silent
from retrieval_gate.evaluation.pipeline import Prepared, load_eval_inputs, prepare
from retrieval_gate.evaluation.run import run_evals
from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.sweep import cache
from retrieval_gate.sweep.plan import Plan, Point, canonical


class CountingEmbedder:
    """Our ``Embedder`` in front of the model: counts the passages the model was asked for."""

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.documents = 0

    def identity(self) -> ModelIdentity:
        return self.inner.identity()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)


def text_keys(*, config: SuiteConfig, shas: Sequence[str]) -> list[str]:
    """One key per (model, backend, device, text): what one embedding is."""
    space = f"{config.model}|{config.embed_backend}|{config.device}|"
    return sorted({hashlib.sha256((space + s).encode()).hexdigest()[:24] for s in shas})


def _same_index_as(point: Point, *, shared: Prepared, seen: dict[str, str]) -> str | None:
    """The earlier point whose index build holds the same chunks (ids, texts, cards, metadata)
    under the same index-time settings bar the chunking, or None (and this one is remembered)."""
    held = {k: v for k, v in point.override.index_part().items() if not k.startswith("chunking.")}
    content = hashlib.sha256("".join(f"{c.id}\0{c.parent_id}\0{c.sha256}\0{canonical(c.metadata)}\0"
                                     for c in shared.chunks).encode()).hexdigest()
    key = canonical({"index": held, "chunks": content})
    if key in seen:
        return seen[key]
    seen[key] = ", ".join(f"{k}={v}" for k, v in point.settings.items())
    return None


def run_points(*, plan: Plan, points: Sequence[Point], base: SuiteConfig, metric: str,
               progress: EvalProgress | None = None, embedder: Embedder | None = None,
               line: Callable[[str], None] = lambda _s: None) -> list[dict[str, Any]]:
    """Run ``points`` (a plan's, in plan order); one ``PointRun`` mapping each: read back from the
    sweep's cache when unchanged since its run, else measured by ``run_evals``."""
    sweep = _Sweep(plan=plan, base=base, metric=metric, progress=progress or Silent(), embedder=embedder, line=line)
    if embedder is None:  # every model the points embed with resolves before anything runs (an unknown one: exit 2)
        sweep.resolve_models(points)
    out: list[dict[str, Any]] = []
    try:
        for number, point in enumerate(points, 1):
            began = time.perf_counter()
            config = point.override.apply(base)
            if len(config.retrievers) != 1:
                raise InputError(Problem("<sweep>", None, f"retriever {config.retriever!r}: a sweep point runs one "
                                         "retriever; sweep several with --axis retriever=dense,bm25"))
            where = f"point {number}/{len(points)}"
            fingerprint, kept = sweep.kept(point, config=config, began=began, where=where)
            if kept is not None:
                out.append(kept)
                continue
            run = sweep.measure(point, config=config, began=began, where=where)
            out.append(run)
            if fingerprint is not None:
                sweep.keep(config, fingerprint=fingerprint, run=run)
    finally:
        sweep.close()
    return out


def _what(point: Point) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.settings.items())


class _Sweep:
    """What the points of one sweep share: the model (one per embedding setting, counting what it
    embeds), the inputs (loaded once per KB and cases, chunked once per chunking and model), the
    store (one per index build and search settings), and the runs still to keep in the cache."""

    def __init__(self, *, plan: Plan, base: SuiteConfig, metric: str, progress: EvalProgress,
                 embedder: Embedder | None, line: Callable[[str], None]):
        from retrieval_gate.embed.cache import EmbeddingCache

        self.plan, self.base, self.metric, self.progress, self.embedder, self.line = (plan, base, metric, progress,
                                                                                      embedder, line)
        self.embedders: dict[str, CountingEmbedder] = {}
        self.shared_cache = EmbeddingCache(None) if base.store.mode == "ephemeral" else None
        self.store: Any = None
        self.group: tuple[int, str] | None = None
        self.loaded: dict[str, Any] = {}  # (kb, cases) → (KnowledgeBase, CaseSet), loaded once
        self.prepared: dict[str, Prepared] = {}  # … and chunking + model → its chunks, truncation, BM25
        self.inputs: dict[str, str] = {}  # (kb, cases) → the fingerprint of their content
        self.identity = None if embedder is None else canonical(vars(embedder.identity()))
        self.pending: list[tuple[SuiteConfig, str, dict[str, Any]]] = []  # runs to keep once the folder is a store
        self.index_contents: dict[str, str] = {}  # what an index build holds → the first point that built it

    def resolve_models(self, points: Sequence[Point]) -> None:
        from retrieval_gate.embed.resolve import resolve_model

        for name in dict.fromkeys(c.model for c in (p.override.apply(self.base) for p in points)
                                  if c.retrievers and any(s.needs_embedder for s in c.retrievers)):
            resolve_model(name)

    def embedder_for(self, config: SuiteConfig) -> CountingEmbedder:
        key = canonical(config.embed.model_dump(mode="json"))
        if key not in self.embedders:
            inner = self.embedder
            if inner is None:
                from retrieval_gate.embed.backends import make_embedder
                from retrieval_gate.embed.resolve import resolve_model

                inner = make_embedder(resolve_model(config.model), settings=config.embed)
            self.embedders[key] = CountingEmbedder(inner)
        return self.embedders[key]

    def prepared_for(self, config: SuiteConfig) -> Prepared:
        where = canonical([config.kb, config.cases])
        if where not in self.loaded:
            self.loaded[where] = load_eval_inputs(config)
        key = canonical([where, config.chunking.model_dump(mode="json"), config.model])
        if key not in self.prepared:
            self.prepared[key] = prepare(config, loaded=self.loaded[where])
        return self.prepared[key]

    def kept(self, point: Point, *, config: SuiteConfig, began: float,
             where: str) -> tuple[str | None, dict[str, Any] | None]:
        """The point's fingerprint (None: not cacheable) and its run read back from the cache, if
        kept and trusted."""
        if not cache.cacheable(config):
            return None, None
        inputs = canonical([config.kb, config.cases])
        if inputs not in self.inputs:
            self.inputs[inputs] = cache.inputs_fingerprint(config)
        fingerprint = cache.point_fingerprint(config, inputs=self.inputs[inputs], metric=self.metric,
                                              embedder=self.identity)
        kept, why = cache.read_point(config, fingerprint=fingerprint, metric=self.metric)
        if kept is None:
            if why is not None:
                self.line(f"{where}: its kept run {fingerprint[:12]} cannot be trusted ({why}); running it again")
            return fingerprint, None
        seconds = time.perf_counter() - began
        run = {"key": point.override.key, "settings": point.settings, "reference": point.reference,
               "group": point.group, **kept, "seconds": round(seconds, 3),
               "run": {"embedded": 0, "reused": len(kept["texts"]), "cached": True}}
        score = f"{self.metric} {kept['metrics'][self.metric]:.4f}"
        self.line(f"{where} {_what(point)}{' (reference)' if point.reference else ''}: {score} · "
                  f"{kept['chunks']} chunks · read back (unchanged since its run: {fingerprint[:12]}) · "
                  f"{seconds:.1f}s")
        return fingerprint, run

    def store_for(self, point: Point, *, config: SuiteConfig, where: str) -> Any:
        """A new store object for a new index build, or for other search settings (exact,
        hnsw_search_ef) on the same build: the collection, named by the build, is kept."""
        from retrieval_gate.store.chroma import ChromaStore, collection_name

        if (point.group, canonical(config.store.model_dump(mode="json"))) == self.group:
            return self.store
        if self.store is not None:
            self.store.close()
        if self.group is None or self.group[0] != point.group:  # a new index build: is it one already made?
            same = _same_index_as(point, shared=self.prepared_for(config), seen=self.index_contents)
            if same is not None:
                self.line(f"{where} {_what(point)}: the same chunks and index settings as {same} — "
                          "this axis may change nothing here (the summary says so when the scores agree)")
        self.group = (point.group, canonical(config.store.model_dump(mode="json")))
        tag = hashlib.sha256(canonical(point.override.index_part()).encode()).hexdigest()[:10]
        self.store = ChromaStore(config.store, collection=collection_name(f"{self.plan.suite}-sweep-{tag}"),
                                 notify=self.progress.note)
        return self.store

    def measure(self, point: Point, *, config: SuiteConfig, began: float, where: str) -> dict[str, Any]:
        """One ``run_evals`` of the point, its run mapping, and its progress line."""
        from retrieval_gate.embed.cache import CachedEmbedder

        store = self.store_for(point, config=config, where=where)
        counting = self.embedder_for(config)
        before = counting.documents
        model: Embedder = counting if self.shared_cache is None else CachedEmbedder(counting, self.shared_cache)
        shared = self.prepared_for(config)
        results = next(iter(run_evals(suite_config=config, suite=self.plan.suite, embedder=model, store=store,
                                      progress=self.progress, prepared=shared).values()))
        metric, chunks = self.metric, shared.chunks
        dense = config.retrievers[0].needs_embedder
        texts = text_keys(config=config, shas=[c.sha256 for c in chunks]) if dense else []
        cut = results.extras.get("truncation") if dense and self.embedder is None else None
        embedded_now = counting.documents - before
        seconds = time.perf_counter() - began
        names = list(dict.fromkeys([*default_metrics(results), metric]))
        if metric not in results.metrics:
            raise InputError(Problem("<sweep>", None, f"metric {metric}: not measured (measured: "
                                     f"{', '.join(results.metrics)})"))
        overall = results.aggregates.get(OVERALL, {})
        run = {
            "key": point.override.key, "settings": point.settings, "reference": point.reference,
            "group": point.group, "chunks": len(chunks), "texts": texts, "seconds": round(seconds, 3),
            "metrics": {n: overall[n].value for n in names if n in overall},
            "cases": {c.id: {"scores": {n: round(c.scores[n], DECIMALS) for n in names if n in c.scores},
                             "slices": sorted(c.slices)} for c in results.cases},
            "run": {"embedded": embedded_now, "reused": max(0, len(texts) - embedded_now)},
            "truncation": cut,
            "search": (results.config.get("store") or {}).get("search"),  # exact or hnsw; None: no dense side
        }
        score = f"{metric} {run['metrics'][metric]:.4f}" if metric in run["metrics"] else f"{metric}: no score"
        self.line(f"{where} {_what(point)}{' (reference)' if point.reference else ''}: {score} · "
                  f"{len(chunks)} chunks · embedded {embedded_now}, reused {run['run']['reused']} · {seconds:.1f}s"
                  + (f" · {truncation_line(cut)}" if cut and cut["chunks"] else ""))
        return run

    def keep(self, config: SuiteConfig, *, fingerprint: str, run: dict[str, Any]) -> None:
        """Keep the run in the cache (the ones that could not be kept yet, too: the store folder
        becomes a store at the first dense run)."""
        self.pending.append((config, fingerprint, run))
        self.pending[:] = [p for p in self.pending if not cache.write_point(p[0], fingerprint=p[1], run=p[2])]

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.shared_cache is not None:
            self.shared_cache.close()
