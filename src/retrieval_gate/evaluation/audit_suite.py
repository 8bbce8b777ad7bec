"""The golden-set audit of one suite's data (shell): load the KB and the cases (the same checks as
``validate``), count the chunks of each card with the suite's chunking, and run the pure audit
(``retrieval_gate.audit.run_audit``) with the suite's ``audit:`` settings and the gate's
``max_drop`` / ``alpha`` for the coverage cells. ``retrieval-gate audit`` and the action's flows
(``publish.audit_step``) both call :func:`audit_suite`, so the file a refresh commits and the file
``audit`` writes locally are the same bytes for the same inputs (``artifacts.run_files.audit_text``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.artifacts.label_sidecar import not_relevant_by_case
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.evaluation.chunks import suite_chunks, truncation_extras
from retrieval_gate.load.dataset import load_dataset
from retrieval_gate.load.kb import load_kb
from retrieval_gate.metrics.names import default_headline_k

if TYPE_CHECKING:
    from retrieval_gate.audit import AuditParams, AuditReport
    from retrieval_gate.score.results import Results
    from retrieval_gate.settings import SuiteConfig


def audit_suite(*, suite_config: SuiteConfig, params: AuditParams | None = None, results: Results | None = None,
                results_source: str = "results") -> AuditReport:
    """The audit of ``suite_config``'s KB and cases. ``params`` (default: the suite's ``audit:``)
    are the knobs; ``results`` (a results file of these cases) turns on the label review at its
    headline k and gives the coverage cells their hit rates (``results_source`` names it in errors)."""
    from retrieval_gate.audit import run_audit

    if suite_config.kb is None or suite_config.cases is None:
        raise UsageError("audit needs --kb and --cases (or a suite that names them)")
    case_set, kb = load_dataset(cases=Path(suite_config.cases), kb=Path(suite_config.kb),
                                missing_gold="score")  # a deleted gold card: an orphaned_gold finding
    assert kb is not None
    chunks: dict[str, int] = {}
    for chunk in suite_chunks(kb, chunking=suite_config.chunking, model=suite_config.model):
        chunks[chunk.card_id] = chunks.get(chunk.card_id, 0) + 1
    k = suite_config.headline_k or default_headline_k(suite_config.k)
    retrieved = None
    if results is not None:
        k = results.headline_k
        retrieved = {c.id: list(c.retrieved) for c in results.cases}
        if not {c.id for c in case_set.cases} & set(retrieved):
            raise InputError(Problem(results_source, None,
                                     "no case of this results file is in the cases: results of another golden set?"))
    gate = suite_config.gate

    return run_audit(cases=case_set.cases, entries=kb.cards, params=params or suite_config.audit, chunks=chunks,
                     max_drop=gate.max_drop.get(f"hit@{k}", gate.default_max_drop), alpha=gate.alpha,
                     retrieved=retrieved, k=k, cases_sha256=case_set.sha256, kb_sha256=kb.sha256,
                     subset=case_set.subset, not_relevant=not_relevant_by_case(Path(suite_config.cases), kb=kb))


def suite_truncation(*, suite_config: SuiteConfig) -> dict | None:
    """How many of the suite's chunks exceed its model's limit (``evaluation.chunks``); None when
    no retriever of the suite embeds, or the model's tokenizer is not at hand."""
    if suite_config.kb is None or not any(spec.needs_embedder for spec in suite_config.retrievers):
        return None
    chunks = suite_chunks(load_kb(Path(suite_config.kb)), chunking=suite_config.chunking, model=suite_config.model)
    return truncation_extras(model=suite_config.model, chunks=chunks)

