"""Scoring assembly: rankings (from a run file or a retriever) → one ``Results``. Pure.

Every expected case is scored (a missing ranking counts as failed), then aggregated per slice,
with completeness and latency. Both ``score`` (a run file) and ``eval`` (a retriever) end here.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from retrieval_gate import __version__
from retrieval_gate.metrics import MetricSpec
from retrieval_gate.metrics.grid import compile_grid
from retrieval_gate.metrics.names import default_headline_k
from retrieval_gate.models import CaseSet, KnowledgeBase, RankedList, positive_gains
from retrieval_gate.score.aggregate import aggregate, completeness, latency_summary
from retrieval_gate.score.kb_manifest import kb_manifest
from retrieval_gate.score.provenance import provenance
from retrieval_gate.score.results import InputInfo, Results
from retrieval_gate.score.scoring import MEANS, score_case


class _Unjudged(NamedTuple):
    """A case's unjudged@k figures, shaped for ``aggregate`` (which reads scores and slices)."""

    scores: dict[str, float]
    slices: list[str]


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector (reference counting still frees everything).
    Scoring builds a dozen small acyclic containers per case; with the collector running, its
    repeated scans of the growing heap cost about a third of the time on 10,000 cases."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def assemble_results(
    *,
    case_set: CaseSet,
    rankings: Mapping[str, RankedList],
    metrics: Sequence[MetricSpec],
    ks: Sequence[int],
    kb: KnowledgeBase | None = None,
    suite: str = "default",
    config: Mapping[str, Any] | None = None,
    inputs: Mapping[str, InputInfo] | None = None,
    headline_k: int | None = None,
    created_at: str | None = None,
    abstain_threshold: float | None = None,
    extras: Mapping[str, Any] | None = None,
    rel_level: int = 1,
    mean: str = "relevant",
    not_relevant: Mapping[str, Collection[str]] | None = None,
) -> Results:
    """Score every expected case (missing rankings count as failed), aggregate per slice.
    ``rel_level``, ``mean`` and ``not_relevant`` (case id → the cards judged not relevant for it,
    the sidecar): see ``score.scoring.score_case``."""
    if mean not in MEANS:
        raise ValueError(f"mean {mean!r}: expected one of {', '.join(MEANS)}")
    chunk_to_card = kb.chunk_to_card if kb is not None else None
    keep = max(ks)
    lines = case_set.lines if case_set.format == "jsonl" else {}
    metrics = compile_grid(metrics)
    with cyclic_gc_paused():
        cases = [
            score_case(case=case, ranking=rankings.get(case.id), metrics=metrics,
                       chunk_to_card=chunk_to_card, keep=keep, abstain_threshold=abstain_threshold,
                       rel_level=rel_level, mean=mean, line=lines.get(case.id),
                       not_relevant=(not_relevant or {}).get(case.id, ()))
            for case in case_set.cases
        ]
        aggregates = aggregate(cases)
        unjudged = aggregate(_Unjudged(c.unjudged, c.slices) for c in cases)
    expected = set(case_set.ids)
    unknown = [qid for qid in rankings if qid not in expected]
    all_inputs = {"cases": InputInfo(path=case_set.path, sha256=case_set.sha256,
                                     format=case_set.format, count=len(case_set.cases))}
    if kb is not None:
        all_inputs["kb"] = InputInfo(path=kb.path, sha256=kb.sha256, format=kb.format,
                                     count=len(kb.card_ids))
    all_inputs.update(inputs or {})
    return Results(
        tool_version=__version__,
        suite=suite,
        created_at=created_at,
        k=sorted(ks),
        headline_k=headline_k if headline_k is not None else default_headline_k(ks),
        metrics=[m.name for m in metrics],
        config=dict(config or {}),
        inputs=all_inputs,
        completeness=completeness(cases, unknown_run_ids=unknown),
        aggregates=aggregates,
        relevance_level=rel_level,
        graded=any(positive_gains(case) is not None for case in case_set.cases),
        mean=mean,
        unjudged=unjudged,
        latency=latency_summary(cases),
        extras=dict(extras or {}),
        provenance=provenance(cases=case_set.cases, entries=kb.cards if kb is not None else None,
                              cases_sha256=case_set.sha256, kb_sha256=kb.sha256 if kb is not None else None,
                              subset=case_set.subset),
        kb_cards=kb_manifest(kb.cards) if kb is not None else None,
        gold_missing=_gold_missing(case_set, kb),
        cases=cases,
    )


def _gold_missing(case_set: CaseSet, kb: KnowledgeBase | None) -> dict[str, list[str]]:
    """Case id → its gold ids that name no card of ``kb`` (nor a chunk of one); empty without a KB."""
    if kb is None:
        return {}
    cards, chunks = kb.card_ids, kb.chunk_to_card
    out: dict[str, list[str]] = {}
    for case in case_set.cases:
        missing = [gold for gold in case.gold if gold not in cards and gold not in chunks]
        if missing:
            out[case.id] = missing
    return out
