"""Per-case scoring: a case, its card ranking, the metric grid → one CaseResult.

Which cases carry scores (and so enter each mean) is the *mean convention* (``MEANS``):

- ``relevant`` (default): every case with ≥ 1 relevant card at the relevance level; a case
  missing from the run scores 0. Cases without a relevant card (no-answer cases) never dilute
  a retrieval mean; they have their own ``abstention`` score.
- ``trec``: as ``trec_eval``: every judged case (≥ 1 judgement, any grade) that the run
  ranks; a judged case with nothing relevant scores 0 on the binary measures.
- ``trec-c``: as ``trec_eval -c``: every judged case; one missing from the run scores 0.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Container, Mapping, Sequence

from retrieval_gate.metrics import MetricSpec, to_cards
from retrieval_gate.metrics.grid import compile_grid, grid_scores
from retrieval_gate.models import MISSING_FROM_RUN, Case, RankedList, judgements, positive_gains, relevant_at
from retrieval_gate.score.results import CaseResult

OVERALL = "overall"  # the slice every case belongs to
NO_ANSWER_SLICE = "no-answer"  # cases with no gold
MEANS = ("relevant", "trec", "trec-c")  # mean conventions (module docstring)


def slice_names(case: Case, relevant: Sequence[str] | None = None) -> list[str]:
    """``overall``, then one ``field=value`` per slice field; cases with nothing relevant
    (``relevant``, default ``case.gold``) also ``no-answer``."""
    names = [OVERALL, *(f"{f}={v}" for f, v in case.slice_values().items())]
    if not (case.gold if relevant is None else relevant):
        names.append(NO_ANSWER_SLICE)
    return names


def ndcg_gains(case: Case, level: int, relevant: Sequence[str]) -> dict[str, int] | None:
    """The case's nDCG gains (grade > 0), or None when they are binary gains over ``relevant``."""
    gains = positive_gains(case)
    if gains is not None:
        return gains
    positive = case.gold if not case.grades else tuple(c for c, g in case.grades.items() if g > 0)
    if level == 1 or tuple(relevant) == positive:
        return None
    return dict.fromkeys(positive, 1)


_UNJUDGED_MEMO: dict[tuple[tuple[int, ...], int, tuple[int, ...]], dict[str, float]] = {}
_MEMO_MAX = 1 << 16


def unjudged_at(ranked: Sequence[str], judged: Container[str], ks: Sequence[int]) -> dict[str, float]:
    """``{"unjudged@k": 1 − Judged@k}``, Judged@k as ir_measures: the judged cards among the first
    k (``judged``: every judgement of the case, any grade, the cards judged not relevant included —
    ``models.judgements``), over k. An empty place of a ranking shorter than k holds no judged card,
    so it counts as unjudged, as in ir_measures. The values depend only on (ks, judged ranks):
    memoised (bounded)."""
    ks = tuple(ks)
    top = ranked[:max(ks, default=0)]
    judged_ranks = tuple(i for i, card in enumerate(top, start=1) if card in judged)
    key = (ks, 0, judged_ranks)
    cached = _UNJUDGED_MEMO.get(key)
    if cached is None:
        cached = {f"unjudged@{k}": (k - bisect_right(judged_ranks, k)) / k for k in ks}
        if len(_UNJUDGED_MEMO) < _MEMO_MAX:
            _UNJUDGED_MEMO[key] = cached
    return dict(cached)


def score_case(
    *,
    case: Case,
    ranking: RankedList | None,
    metrics: Sequence[MetricSpec],
    chunk_to_card: Mapping[str, str] | None = None,
    keep: int = 10,
    abstain_threshold: float | None = None,
    rel_level: int = 1,
    mean: str = "relevant",
    line: int | None = None,
    not_relevant: Collection[str] = (),
) -> CaseResult:
    """Score one case. A missing ranking or one carrying an error counts as *failed* and is
    scored as an empty ranking: never silently dropped (except that ``mean="trec"`` leaves a
    case missing from the run unscored, as trec_eval). ``keep`` bounds the stored ranking;
    ``rel_level``: the grade from which a card counts as relevant (trec_eval ``-l``);
    ``not_relevant``: the cards judged not relevant for this case outside its gold (the sidecar
    ``cases.not-relevant.jsonl``): judged (grade 0), so never unjudged."""
    metrics = compile_grid(metrics)
    depth = metrics.depth
    if ranking is None:
        error: str | None = MISSING_FROM_RUN
        ids: tuple[str, ...] = ()
    else:
        error = ranking.error
        # a measure without a cutoff (R-precision) reads the ranking to its end, as trec_eval does
        ids = () if error else to_cards(ranking.ids, chunk_to_card=chunk_to_card,
                                        limit=None if metrics.whole else max(keep, depth))
    relevant = relevant_at(case, level=rel_level)
    relevant_set = frozenset(relevant)
    judged: Container[str] = judgements(case, not_relevant)
    sidecar = sorted(set(not_relevant) - set(case.gold) - set(case.grades)) if not_relevant else []
    if mean == "relevant":
        scored = bool(relevant)
    elif mean == "trec":
        scored = bool(judged) and ranking is not None
    else:
        scored = bool(judged)
    scores: dict[str, float] = {}
    unjudged: dict[str, float] = {}
    if scored and metrics:
        gains = None if rel_level == 1 and not case.grades else ndcg_gains(case, rel_level, relevant)
        scores = grid_scores(ids, gold=relevant_set, metrics=metrics, gains=gains) if gains is not None or relevant \
            else dict(metrics.zeros)
        if error is None and ranking is not None:  # a failed case ranked nothing to judge
            unjudged = unjudged_at(ids, judged, metrics.ks)
    if not relevant and abstain_threshold is not None and error is None and ranking is not None:
        scores["abstention"] = abstention(ranking, abstain_threshold)
    status = "failed" if error else ("scored" if scored else "no_gold")
    # Every field below comes from validated models or from this module: skip re-validation.
    return CaseResult.model_construct(
        id=case.id, query=case.query, kind=case.kind, locale=case.locale, form=case.form,
        hard_class=case.hard_class, tags=dict(case.tags), gold=list(case.gold),
        grades=dict(case.grades) if case.grades else {}, retrieved=list(ids[:keep]),
        retrieved_scores=card_scores(ranking, ids[:keep], chunk_to_card) if error is None else [],
        scores=scores, unjudged=unjudged, not_relevant=sidecar,
        status=status, error=error, latency_ms=None if ranking is None else ranking.latency_ms,
        slices=slice_names(case, relevant), line=line,
    )


def card_scores(ranking: RankedList | None, cards: Sequence[str],
                chunk_to_card: Mapping[str, str] | None) -> list[float]:
    """The retriever's score of each card in ``cards`` (its first, best-ranked entry's), rounded
    to 4 decimals; empty when the retriever gives no scores."""
    if ranking is None or ranking.scores is None or not cards:
        return []
    first: dict[str, float] = {}
    for entry, value in zip(ranking.ids, ranking.scores, strict=False):
        card = chunk_to_card.get(entry, entry) if chunk_to_card is not None else entry
        if card not in first:
            first[card] = value
            if len(first) >= len(cards):
                break
    return [round(float(first.get(card, 0.0)), 4) for card in cards]


def abstention(ranking: RankedList, threshold: float) -> float:
    """For a case with empty gold: 1 when the retriever returned nothing scoring ≥ threshold
    (it correctly found no answer), else 0. Needs scores."""
    if not ranking.ids:
        return 1.0
    if ranking.scores is None:
        return 0.0
    return 0.0 if any(s >= threshold for s in ranking.scores) else 1.0
