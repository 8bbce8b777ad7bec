"""Per-case scoring: a case, its card ranking, the metric grid → one CaseResult."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrieval_gate.metrics import MetricSpec, to_cards
from retrieval_gate.metrics.grid import compile_grid, grid_scores
from retrieval_gate.models import Case, RankedList
from retrieval_gate.score.results import CaseResult

OVERALL = "overall"  # the slice every case belongs to
NO_ANSWER_SLICE = "no-answer"  # cases with no gold


def case_scores(ranked: Sequence[str], gold: Sequence[str], metrics: Sequence[MetricSpec]) -> dict[str, float]:
    """Score one de-duplicated card ranking. Empty gold → no keys at all (ADR-0023 (B)).

    Values equal ``metrics.FUNCTIONS[measure](ranked, set(gold), k)`` exactly; they are computed
    in one pass by ``metrics.grid.grid_scores``."""
    if not gold or not metrics:
        return {}
    return grid_scores(ranked, frozenset(gold), metrics)


def slice_names(case: Case) -> list[str]:
    """``overall``, then one ``field=value`` per slice field; no-gold cases also ``no-answer``."""
    names = [OVERALL, *(f"{f}={v}" for f, v in case.slice_values().items())]
    if not case.gold:
        names.append(NO_ANSWER_SLICE)
    return names


def score_case(
    *,
    case: Case,
    ranking: RankedList | None,
    metrics: Sequence[MetricSpec],
    chunk_to_card: Mapping[str, str] | None = None,
    keep: int = 10,
    abstain_threshold: float | None = None,
) -> CaseResult:
    """Score one case. A missing ranking or one carrying an error counts as *failed* and is
    scored as an empty ranking: never silently dropped. ``keep`` bounds the stored ranking."""
    metrics = compile_grid(metrics)
    depth = metrics.depth
    if ranking is None:
        error: str | None = "missing from the run"
        ids: tuple[str, ...] = ()
    else:
        error = ranking.error
        ids = () if error else to_cards(ranking.ids, chunk_to_card, limit=max(keep, depth))
    scores = case_scores(ids, case.gold, metrics)
    if not case.gold and abstain_threshold is not None and error is None and ranking is not None:
        scores = {"abstention": abstention(ranking, abstain_threshold)}
    status = "failed" if error else ("scored" if case.gold else "no_gold")
    # Every field below comes from validated models or from this module: skip re-validation.
    return CaseResult.model_construct(
        id=case.id, query=case.query, kind=case.kind, locale=case.locale, form=case.form,
        hard_class=case.hard_class, tags=dict(case.tags), gold=list(case.gold),
        retrieved=list(ids[:keep]), scores=scores, status=status, error=error,
        latency_ms=None if ranking is None else ranking.latency_ms,
        slices=slice_names(case),
    )


def abstention(ranking: RankedList, threshold: float) -> float:
    """For a case with empty gold: 1 when the retriever returned nothing scoring ≥ threshold
    (it correctly found no answer; ADR-072 §1), else 0. Needs scores."""
    if not ranking.ids:
        return 1.0
    if ranking.scores is None:
        return 0.0
    return 0.0 if any(s >= threshold for s in ranking.scores) else 1.0
