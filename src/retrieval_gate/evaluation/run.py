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
3. rank every case (no-answer cases too: they are scored as abstention when a threshold is set),
   to the suite's largest k — or, when a measure without a cutoff is measured (R-precision), to
   the largest R (relevant cards) of any case when that is deeper (``retrieval_depth``): R-precision
   reads the first R cards, so it equals trec_eval's ``Rprec`` on any deeper run;
   rankings that cannot be a measurement — every one empty, or most ids not cards of the KB —
   stop the run (exit 2, ``score.validity``) before anything is written;
4. score and aggregate, per retriever.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_gate.artifacts.label_sidecar import golden_judgements, not_relevant_by_case
from retrieval_gate.embed.base import Embedder
from retrieval_gate.errors import RetrieverError, UsageError
from retrieval_gate.evaluation.ann_check import ann_check, ann_sample_check
from retrieval_gate.evaluation.chunks import truncation_extras
from retrieval_gate.evaluation.dense_parts import EvalProgress, Silent, VectorStore, dense_extras
from retrieval_gate.evaluation.pipeline import Pipeline, Prepared, input_paths, prepare
from retrieval_gate.load.runs import check_run_matches
from retrieval_gate.metrics import DEFAULT_MEASURES, metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList, relevant_at
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.custom import RunRetriever
from retrieval_gate.retrieve.factory import RetrieverBuilder
from retrieval_gate.retrieve.spec import RetrieverSpec
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.false_exclusion import false_exclusion_extras
from retrieval_gate.score.results import Results
from retrieval_gate.score.validity import check_rankings
from retrieval_gate.settings import SuiteConfig


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
            f"and gate each suite, or compare them side by side with `retrieval-gate eval --suite {suite} "
            f"--out out/results.json`")


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
    input_paths(suite_config)  # a missing --kb / --cases before anything is built
    # 0. the parts, from their settings (nothing read or touched yet)
    with Pipeline(suite_config=suite_config, suite=suite, specs=specs, embedder=embedder, store=store,
                  progress=progress, cache_from=cache_from) as pipe:
        # 1. inputs
        shared = prepared if prepared is not None else prepare(suite_config)
        loaded_s = time.perf_counter() - began
        # 2. parts, then retrievers
        builder = pipe.build(kb=shared.kb, chunks=shared.chunks, cases=shared.case_set.cases, bm25_built=shared.bm25)
        truncation = _truncation(pipe, shared, model=suite_config.model, handed_in=embedder is not None)
        retrievers = _retrievers(builder, pipe=pipe, case_set=shared.case_set, progress=progress)
        # 3 and 4. rank, score
        measure = _Measure(suite_config=suite_config, suite=suite, shared=shared, pipe=pipe, created_at=created_at,
                           truncation=truncation, loaded_s=loaded_s, began=began)
        return {spec.name: measure.results(spec, retriever, built_s) for spec, retriever, built_s in retrievers}


def _truncation(pipe: Pipeline, shared: Prepared, *, model: str, handed_in: bool) -> dict[str, Any] | None:
    """What the model cuts (the real model only: a handed-in embedder has no tokenizer here), once
    per ``Prepared``."""
    if pipe.dense_retriever is None or handed_in:
        return None
    if not shared.truncation_known:
        shared.truncation, shared.truncation_known = truncation_extras(model=model, chunks=shared.chunks), True
    return shared.truncation


def _retrievers(builder: RetrieverBuilder, *, pipe: Pipeline, case_set: CaseSet,
                progress: EvalProgress) -> list[tuple[RetrieverSpec, Retriever, float]]:
    """Each spec's retriever and the seconds it took to build (the dense side's build counted once,
    for the first spec that uses it); a ``run:`` file that matches no case is noted."""
    out: list[tuple[RetrieverSpec, Retriever, float]] = []
    dense_s = pipe.dense_s
    for spec in pipe.specs:
        spec_began = time.perf_counter()
        retriever = builder.build(spec)
        if isinstance(retriever, RunRetriever):  # a run that matches no case measured nothing: exit 2
            warning = check_run_matches(run_ids=retriever.run.rankings, case_ids=[c.id for c in case_set.cases],
                                        run_path=retriever.run.path, cases_path=case_set.path)
            if warning is not None:
                progress.note(warning)
        built_s = time.perf_counter() - spec_began
        if spec.needs_embedder:
            built_s, dense_s = built_s + dense_s, 0.0
        out.append((spec, retriever, built_s))
    return out


class _Measure:
    """Rank every case with one retriever and score it (the same path as ``score``)."""

    def __init__(self, *, suite_config: SuiteConfig, suite: str, shared: Prepared, pipe: Pipeline,
                 created_at: str | None, truncation: dict[str, Any] | None, loaded_s: float, began: float):
        self.config, self.suite, self.shared, self.pipe = suite_config, suite, shared, pipe
        self.created_at, self.truncation, self.loaded_s, self.began = created_at, truncation, loaded_s, began
        cases = shared.case_set.cases
        self.grid = metric_specs(suite_config.k, measures=suite_config.metrics or DEFAULT_MEASURES)
        self.depth = retrieval_depth(cases, ks=suite_config.k, whole=self.grid.whole, rel_level=suite_config.rel_level)
        self.queries = [c.query for c in cases]
        self.filters = [c.filter for c in cases]
        self.false_exclusion = false_exclusion_extras(cases=cases,
                                                      units=[(c.parent_id, c.metadata) for c in shared.chunks])
        # judged not relevant (at the card's content now): never unjudged
        self.not_relevant = not_relevant_by_case(Path(shared.case_set.path), kb=shared.kb)
        self.judgements = suite_config.judgements or golden_judgements(shared.case_set)  # compare.judgements
        self._sampled = False
        self._sample: tuple[dict[str, Any], float] | None = None

    def results(self, spec: RetrieverSpec, retriever: Retriever, built_s: float) -> Results:
        config, case_set, ks, dense = self.config, self.shared.case_set, self.config.k, self.pipe.dense
        search_began = time.perf_counter()
        depth = self.depth
        ranked = (retriever.search_cases([c.id for c in case_set.cases], depth)  # run files: by case id
                  if isinstance(retriever, RunRetriever) else retriever.search(self.queries, depth, self.filters))
        search_s = time.perf_counter() - search_began
        extras: dict[str, Any] = {}
        config_out: dict[str, Any] = {"retriever": spec.name, "k": list(ks), "overfetch": config.overfetch,
                                      "judgements": self.judgements}
        if dense is not None and spec.needs_embedder:  # built when a spec needs it; bm25/custom carry no model
            config_out.update(dense.fingerprint())
            extras.update(dense_extras(dense))
            if self.truncation is not None:
                extras["truncation"] = self.truncation
        if self.false_exclusion is not None:
            extras["filter_false_exclusion"] = self.false_exclusion
        if retriever is not self.pipe.dense_retriever:  # hybrid, bm25, custom: their own parameters
            config_out["details"] = retriever.fingerprint()
        if depth > max(ks):  # retrieved deeper than the largest k: R-precision reads each case's top R
            extras["retrieval_depth"] = depth
        extras["timings"] = {"load_s": round(self.loaded_s, 3), "build_s": round(built_s, 3),
                             "search_s": round(search_s, 3)}
        rankings = _by_case(case_set, ranked, retriever)
        self.refuse_no_measurement(spec, rankings)
        results = assemble_results(case_set=case_set, rankings=rankings, metrics=self.grid,
                                   ks=ks, kb=self.shared.kb, suite=self.suite, config=config_out,
                                   headline_k=config.headline_k, created_at=self.created_at,
                                   abstain_threshold=config.abstain_threshold, extras=extras,
                                   rel_level=config.rel_level, mean=config.mean, not_relevant=self.not_relevant)
        if dense is not None and config.store.ann_check and retriever is self.pipe.dense_retriever:
            results.extras["ann_check"] = ann_check(dense=dense, case_set=case_set, kb=self.shared.kb,
                                                    queries=self.queries, filters=self.filters, main=results,
                                                    grid=self.grid, ks=ks)
        if dense is not None and spec.needs_embedder:
            sample = self.ann_sample(dense, ks=ks)
            if sample is not None:
                results.extras["ann_sample"], results.extras["timings"]["ann_sample_s"] = sample
        results.extras["timings"]["total_s"] = round(time.perf_counter() - self.began, 3)
        return results

    def ann_sample(self, dense: Any, *, ks: Sequence[int]) -> tuple[dict[str, Any], float] | None:
        """The HNSW sample check (``ann_sample_check``), once per eval: every retriever over the
        dense side shares its index; its note goes to the terminal once."""
        if not self._sampled:
            self._sampled = True
            checked = ann_sample_check(dense=dense, queries=self.queries, filters=self.filters, ks=ks)
            if checked is not None:
                self._sample = (checked[0], round(checked[1], 3))
                if checked[0]["note"]:
                    self.pipe.progress.note(checked[0]["note"])
        return (dict(self._sample[0]), self._sample[1]) if self._sample is not None else None

    def refuse_no_measurement(self, spec: RetrieverSpec, rankings: dict[str, RankedList]) -> None:
        """Exit 2 when the rankings cannot be a measurement (every one empty, or most ids not KB
        cards: ``score.validity``); a few non-card ids are noted and scored as misses."""
        check = check_rankings((rankings.get(case.id) for case in self.shared.case_set.cases), kb=self.shared.kb)
        who = f"retriever {spec.name!r}"
        problem = check.problem(who)
        if problem is not None:
            raise RetrieverError(problem)
        warning = check.warning(who)
        if warning is not None:
            self.pipe.progress.note(warning)


def retrieval_depth(cases: Sequence[Case], *, ks: Sequence[int], whole: bool, rel_level: int = 1) -> int:
    """How many cards each case is retrieved to: the largest k; with a measure without a cutoff
    (R-precision, ``whole``), at least the largest R = the relevant cards of any case at
    ``rel_level`` — every case gets at least its own R, so its R-precision reads a full top R."""
    depth = max(ks)
    if whole:
        depth = max([depth, *(len(relevant_at(case, level=rel_level)) for case in cases)])
    return depth


def _by_case(case_set: CaseSet, ranked: Sequence[RankedList], retriever: Retriever) -> dict[str, RankedList]:
    if len(ranked) != len(case_set.cases):
        raise UsageError(f"retriever {retriever.name!r} answered {len(ranked)} of {len(case_set.cases)} queries")
    return {case.id: r for case, r in zip(case_set.cases, ranked, strict=True)}
