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
  settings (``evaluation.run.Prepared``).
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
from retrieval_gate.evaluation.chunks import suite_chunks, truncation_line
from retrieval_gate.evaluation.dense_parts import EvalProgress, Silent
from retrieval_gate.evaluation.run import Prepared, load_eval_inputs, run_evals
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
    """Run ``points`` (a plan's, in plan order); one ``PointRun`` mapping each."""
    from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
    from retrieval_gate.store.chroma import ChromaStore, collection_name

    progress = progress or Silent()
    embedders: dict[str, CountingEmbedder] = {}
    shared_cache = EmbeddingCache(None) if base.store.mode == "ephemeral" else None

    def embedder_for(config: SuiteConfig) -> CountingEmbedder:
        key = canonical(config.embed.model_dump(mode="json"))
        if key not in embedders:
            inner = embedder
            if inner is None:
                from retrieval_gate.embed.backends import make_embedder
                from retrieval_gate.embed.resolve import resolve_model

                inner = make_embedder(resolve_model(config.model), settings=config.embed)
            embedders[key] = CountingEmbedder(inner)
        return embedders[key]

    if embedder is None:  # every model the points embed with resolves before anything runs (an unknown one: exit 2)
        from retrieval_gate.embed.resolve import resolve_model

        for name in dict.fromkeys(c.model for c in (p.override.apply(base) for p in points)
                                  if c.retrievers and any(s.needs_embedder for s in c.retrievers)):
            resolve_model(name)
    out: list[dict[str, Any]] = []
    store: Any = None
    group: tuple[int, str] | None = None
    total = len(points)
    loaded: dict[str, Any] = {}  # (kb, cases) → (KnowledgeBase, CaseSet), loaded once
    prepared: dict[str, Prepared] = {}  # … and chunking + model → its chunks, truncation, BM25
    inputs: dict[str, str] = {}  # (kb, cases) → the fingerprint of their content
    identity = None if embedder is None else canonical(vars(embedder.identity()))
    pending: list[tuple[SuiteConfig, str, dict[str, Any]]] = []  # runs to keep once the store folder is a store
    index_contents: dict[str, str] = {}  # what an index build holds → the first point that built it

    def prepared_for(config: SuiteConfig) -> Prepared:
        where = canonical([config.kb, config.cases])
        if where not in loaded:
            loaded[where] = load_eval_inputs(config)
        key = canonical([where, config.chunking.model_dump(mode="json"), config.model])
        if key not in prepared:
            kb, case_set = loaded[where]
            prepared[key] = Prepared(kb=kb, case_set=case_set,
                                     chunks=suite_chunks(kb, chunking=config.chunking, model=config.model))
        return prepared[key]

    try:
        for number, point in enumerate(points, 1):
            began = time.perf_counter()
            config = point.override.apply(base)
            if len(config.retrievers) != 1:
                raise InputError(Problem("<sweep>", None, f"retriever {config.retriever!r}: a sweep point runs one "
                                         "retriever; sweep several with --axis retriever=dense,bm25"))
            what = ", ".join(f"{k}={v}" for k, v in point.settings.items())
            fingerprint = None
            if cache.cacheable(config):
                where = canonical([config.kb, config.cases])
                if where not in inputs:
                    inputs[where] = cache.inputs_fingerprint(config)
                fingerprint = cache.point_fingerprint(config, inputs=inputs[where], metric=metric, embedder=identity)
                kept, why = cache.read_point(config, fingerprint=fingerprint, metric=metric)
                if kept is not None:
                    seconds = time.perf_counter() - began
                    run = {"key": point.override.key, "settings": point.settings, "reference": point.reference,
                           "group": point.group, **kept, "seconds": round(seconds, 3),
                           "run": {"embedded": 0, "reused": len(kept["texts"]), "cached": True}}
                    out.append(run)
                    score = f"{metric} {kept['metrics'][metric]:.4f}"
                    line(f"point {number}/{total} {what}{' (reference)' if point.reference else ''}: {score} · "
                         f"{kept['chunks']} chunks · read back (unchanged since its run: {fingerprint[:12]}) · "
                         f"{seconds:.1f}s")
                    continue
                if why is not None:
                    line(f"point {number}/{total}: its kept run {fingerprint[:12]} cannot be trusted ({why}); "
                         "running it again")
            # A new store object for a new index build, or for other search settings (exact,
            # hnsw_search_ef) on the same build: the collection, named by the build, is kept.
            if (point.group, canonical(config.store.model_dump(mode="json"))) != group:
                if store is not None:
                    store.close()
                if group is None or group[0] != point.group:  # a new index build: is it one already made?
                    same = _same_index_as(point, shared=prepared_for(config), seen=index_contents)
                    if same is not None:
                        line(f"point {number}/{total} {what}: the same chunks and index settings as {same} — "
                             "this axis may change nothing here (the summary says so when the scores agree)")
                group = (point.group, canonical(config.store.model_dump(mode="json")))
                tag = hashlib.sha256(canonical(point.override.index_part()).encode()).hexdigest()[:10]
                store = ChromaStore(config.store, collection=collection_name(f"{plan.suite}-sweep-{tag}"),
                                    notify=progress.note)
            counting = embedder_for(config)
            before = counting.documents
            model: Embedder = counting
            if shared_cache is not None:
                model = CachedEmbedder(counting, shared_cache)
            shared = prepared_for(config)
            results = next(iter(run_evals(suite_config=config, suite=plan.suite, embedder=model, store=store,
                                          progress=progress, prepared=shared).values()))
            chunks = shared.chunks
            dense = config.retrievers[0].needs_embedder
            texts = text_keys(config=config, shas=[c.sha256 for c in chunks]) if dense else []
            cut = results.extras.get("truncation") if dense and embedder is None else None
            embedded_now = counting.documents - before
            seconds = time.perf_counter() - began
            names = list(dict.fromkeys([*default_metrics(results), metric]))
            if metric not in results.metrics:
                raise InputError(Problem("<sweep>", None, f"metric {metric}: not measured (measured: "
                                         f"{', '.join(results.metrics)})"))
            run = {
                "key": point.override.key, "settings": point.settings, "reference": point.reference,
                "group": point.group, "chunks": len(chunks), "texts": texts, "seconds": round(seconds, 3),
                "metrics": {n: results.aggregates.get(OVERALL, {})[n].value for n in names
                            if n in results.aggregates.get(OVERALL, {})},
                "cases": {c.id: {"scores": {n: round(c.scores[n], DECIMALS) for n in names if n in c.scores},
                                 "slices": sorted(c.slices)} for c in results.cases},
                "run": {"embedded": embedded_now, "reused": max(0, len(texts) - embedded_now)},
                "truncation": cut,
                "search": (results.config.get("store") or {}).get("search"),  # exact or hnsw; None: no dense side
            }
            out.append(run)
            if fingerprint is not None:
                pending.append((config, fingerprint, run))
                pending[:] = [p for p in pending if not cache.write_point(p[0], fingerprint=p[1], run=p[2])]
            score = f"{metric} {run['metrics'][metric]:.4f}" if metric in run["metrics"] else f"{metric}: no score"
            line(f"point {number}/{total} {what}{' (reference)' if point.reference else ''}: {score} · "
                 f"{len(chunks)} chunks · embedded {embedded_now}, reused {run['run']['reused']} · {seconds:.1f}s"
                 + (f" · {truncation_line(cut)}" if cut and cut["chunks"] else ""))
    finally:
        if store is not None:
            store.close()
        if shared_cache is not None:
            shared_cache.close()
    return out
