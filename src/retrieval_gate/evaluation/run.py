"""The eval orchestrator: KB + cases → chunks → embeddings → store → retrievers → the same
scoring path as ``score`` (``score.assemble.assemble_results``).

``run_evals`` receives its adapters (embedder, store, progress) so tests can hand it fakes of our
interfaces; by default the dense side builds the sentence-transformers embedder and the Chroma
store from the suite config (``evaluation.dense_parts``).

Order of work, top to bottom:

1. load and check the inputs (integrity first: a bad gold id stops the run before anything is
   embedded) and chunk the KB;
2. build every part before running anything: the dense side (store sync, embeddings) when some
   retriever needs it, the BM25 units when some retriever needs them, then each retriever from
   its spec (``retrieve.factory.RetrieverBuilder``, which shares parts between specs);
3. rank every case (no-answer cases too: they are scored as abstention when a threshold is set);
4. score and aggregate, per retriever.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_gate.artifacts.label_sidecar import not_relevant_by_case
from retrieval_gate.chunk.chunking import Chunk
from retrieval_gate.embed.base import Embedder
from retrieval_gate.errors import UsageError
from retrieval_gate.evaluation.ann_check import ann_check
from retrieval_gate.evaluation.chunks import suite_chunks, truncation_extras
from retrieval_gate.evaluation.dense_parts import DenseParts, EvalProgress, Silent, VectorStore, dense_extras
from retrieval_gate.load.dataset import load_dataset
from retrieval_gate.load.runs import check_run_matches
from retrieval_gate.metrics import DEFAULT_MEASURES, metric_specs
from retrieval_gate.models import CaseSet, KnowledgeBase, RankedList
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.custom import RunRetriever
from retrieval_gate.retrieve.factory import RetrieverBuilder
from retrieval_gate.retrieve.spec import RetrieverSpec
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.false_exclusion import false_exclusion_extras
from retrieval_gate.score.results import Results
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


def run_eval(*, suite_config: SuiteConfig, suite: str, embedder: Embedder | None = None,
             store: VectorStore | None = None, progress: EvalProgress | None = None,
             created_at: str | None = None) -> Results:
    """Measure the one retriever ``suite_config.retriever`` names: what a gate judges (the action,
    one baseline and one comment per suite). Several are refused (``one_retriever_problem``)."""
    problem = one_retriever_problem(suite_config=suite_config, suite=suite)
    if problem is not None:
        raise UsageError(problem)
    return next(iter(run_evals(suite_config=suite_config, suite=suite, embedder=embedder, store=store,
                               progress=progress, created_at=created_at).values()))


def one_retriever_problem(*, suite_config: SuiteConfig, suite: str) -> str | None:
    """Why a suite that names several retrievers cannot be gated (None when it names one): a gate
    judges one retriever against one baseline; `retrieval-gate eval` measures several side by side."""
    specs = suite_config.retrievers
    if len(specs) == 1:
        return None
    names = ", ".join(spec.name for spec in specs)
    return (f"suite {suite!r} names {len(specs)} retrievers ({names}); a gate judges one retriever against "
            f"one baseline: give each retriever its own suite in the config file (suites.<name>.retriever) "
            f"and gate each suite, or compare them side by side with `retrieval-gate eval --suite {suite}`")


def run_evals(*, suite_config: SuiteConfig, suite: str, embedder: Embedder | None = None,
              store: VectorStore | None = None, progress: EvalProgress | None = None,
              created_at: str | None = None, cache_from: Sequence[Path] = (),
              prepared: Prepared | None = None) -> dict[str, Results]:
    """One Results per retriever spec in ``suite_config.retriever`` (comma-separated), in order,
    keyed by spec name; the parts (embeddings, store, BM25 index) are built once and shared.
    ``cache_from``: shard folders (``retrieval-gate embed``) whose vectors fill the cache first.
    ``prepared``: the inputs already loaded and chunked for this suite config (and the memo of
    what several evals share), instead of reading them again."""
    began = time.perf_counter()
    progress = progress or Silent()
    specs = suite_config.retrievers
    ks = suite_config.k
    # 0. the parts, from their settings (nothing read or touched yet)
    kb_path, cases_path = input_paths(suite_config)
    dense = (DenseParts(embed=suite_config.embed, store=suite_config.store, chunking=suite_config.chunking,
                        overfetch=suite_config.overfetch, suite=suite, embedder=embedder, vector_store=store,
                        progress=progress, cache_from=cache_from)
             if any(s.needs_embedder for s in specs) else None)
    try:
        # 1. inputs
        if prepared is None:
            kb, case_set = load_inputs(kb=kb_path, cases=cases_path)
            chunks = suite_chunks(kb, chunking=suite_config.chunking, model=suite_config.model)
        else:
            kb, case_set, chunks = prepared.kb, prepared.case_set, prepared.chunks
        loaded_s = time.perf_counter() - began
        # 2. parts, then retrievers
        dense_began = time.perf_counter()
        dense_retriever = dense.build(kb=kb, chunks=chunks) if dense is not None else None
        dense_s = time.perf_counter() - dense_began
        # What the model cuts (the real model only: a handed-in embedder has no tokenizer here)
        truncation = None
        if dense_retriever is not None and embedder is None:
            if prepared is not None and prepared.truncation_known:
                truncation = prepared.truncation
            else:
                truncation = truncation_extras(model=suite_config.model, chunks=chunks)
                if prepared is not None:
                    prepared.truncation, prepared.truncation_known = truncation, True
        builder = RetrieverBuilder(kb=kb, options=suite_config.options, overfetch=suite_config.overfetch,
                                   dense=dense_retriever, cases=case_set.cases,
                                   bm25_units=_bm25_units(chunks, specs),
                                   bm25_built=prepared.bm25 if prepared is not None else None)
        retrievers: list[tuple[RetrieverSpec, Retriever, float]] = []
        for spec in specs:
            spec_began = time.perf_counter()
            retriever = builder.build(spec)
            if isinstance(retriever, RunRetriever):  # a run that matches no case measured nothing: exit 2
                warning = check_run_matches(run_ids=retriever.run.rankings, case_ids=[c.id for c in case_set.cases],
                                            run_path=retriever.run.path, cases_path=case_set.path)
                if warning is not None:
                    progress.note(warning)
            built_s = time.perf_counter() - spec_began
            if spec.needs_embedder:  # the dense side's build counts once, for the first spec using it
                built_s, dense_s = built_s + dense_s, 0.0
            retrievers.append((spec, retriever, built_s))
        # 3 and 4. rank, score
        grid = metric_specs(ks, measures=suite_config.metrics or DEFAULT_MEASURES)
        queries = [c.query for c in case_set.cases]
        filters = [c.filter for c in case_set.cases]
        false_exclusion = false_exclusion_extras(cases=case_set.cases,
                                                 units=[(c.parent_id, c.metadata) for c in chunks])
        not_relevant = not_relevant_by_case(Path(case_set.path))  # judged not relevant: judged, never unjudged
        out: dict[str, Results] = {}
        for spec, retriever, built_s in retrievers:
            search_began = time.perf_counter()
            ranked = (retriever.search_cases([c.id for c in case_set.cases], max(ks))  # run files: by case id
                      if isinstance(retriever, RunRetriever) else retriever.search(queries, max(ks), filters))
            search_s = time.perf_counter() - search_began
            rankings = _by_case(case_set, ranked, retriever)
            extras: dict[str, Any] = {}
            config_out: dict[str, Any] = {"retriever": spec.name, "k": list(ks), "overfetch": suite_config.overfetch}
            if dense is not None and spec.needs_embedder:  # built when a spec needs it; bm25/custom carry no model
                config_out.update(dense.fingerprint())
                extras.update(dense_extras(dense))
                if truncation is not None:
                    extras["truncation"] = truncation
            if false_exclusion is not None:
                extras["filter_false_exclusion"] = false_exclusion
            if retriever is not dense_retriever:  # hybrid, bm25, custom: their own parameters
                config_out["details"] = retriever.fingerprint()
            extras["timings"] = {"load_s": round(loaded_s, 3), "build_s": round(built_s, 3),
                                 "search_s": round(search_s, 3)}
            results = assemble_results(case_set=case_set, rankings=rankings, metrics=grid, ks=ks, kb=kb,
                                       suite=suite, config=config_out, headline_k=suite_config.headline_k,
                                       created_at=created_at, abstain_threshold=suite_config.abstain_threshold,
                                       extras=extras, rel_level=suite_config.rel_level, mean=suite_config.mean,
                                       not_relevant=not_relevant)
            if dense is not None and suite_config.store.ann_check and retriever is dense_retriever:
                results.extras["ann_check"] = ann_check(dense=dense, case_set=case_set, kb=kb, queries=queries,
                                                        filters=filters, main=results, grid=grid, ks=ks)
            results.extras["timings"]["total_s"] = round(time.perf_counter() - began, 3)
            out[spec.name] = results
    finally:
        if dense is not None:
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
