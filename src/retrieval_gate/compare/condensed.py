"""What the labels know: ``judged@k`` of both sides, and the *condensed reading* of a comparison. Pure.

**A judgement is a judgement.** A case's judged cards are its gold (any grade, 0 included: graded
gold, BEIR qrels) and the cards judged not relevant for it (the sidecar
``cases.not-relevant.jsonl``, the draft's pool answers once applied; ``models.judgements``). A
card is *unjudged* for a case only when no judgement names it for that case.

``judged@k`` = (judged cards in the first k places) / k, as ir_measures' ``Judged@k`` (an empty
place — a ranking shorter than k — is not judged); ``unjudged@k`` = 1 − judged@k. Both sides of a
comparison are read with **the current golden set's judgements** (the baseline's stored rankings,
its first max(k) distinct cards, against the labels as they are now), per slice, over the scored
cases (a failed case ranked nothing to judge).

**Two readings.** The *standard* reading is every report's: an unjudged card counts as not
relevant, so a system that surfaces cards nobody judged reads as a lower bound. The *condensed*
reading (Sakai 2007, "condensed lists") removes the unjudged cards from each ranking before
scoring — both sides, from their stored top max(k), with the same judgements — so it reads only
what the labels know. The gate runs on both (``compare.comparison.compare``); when they disagree
on whether the gate fails, the verdict is ``needs-labels``: the labels cannot support either
verdict, and labelling the unjudged cards of the PR's top k (``retrieval-gate label top-up``)
settles it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.metrics import parse_metric
from retrieval_gate.metrics.grid import compile_grid, grid_scores
from retrieval_gate.metrics.names import is_metric_name
from retrieval_gate.models import judgements
from retrieval_gate.score.aggregate import aggregate
from retrieval_gate.score.results import CaseResult, Results

# More than this share of unjudged cards in the PR's top k (at the headline k, overall): the comment
# says so even when both readings agree (docs/baseline.md "What the labels know").
UNJUDGED_NOTE_SHARE = 0.10


class JudgedCell(BaseModel):
    """judged@k of one slice on both sides (None: that side has no rankings to read)."""

    model_config = ConfigDict(extra="forbid")

    current: float | None = None
    n_current: int = 0
    baseline: float | None = None
    n_baseline: int = 0


def condense(ranked: Iterable[str], judged: Collection[str]) -> list[str]:
    """The ranking with every unjudged card removed (the order of the rest kept)."""
    return [card for card in ranked if card in judged]


def unjudged_cards(case: CaseResult, k: int) -> list[str]:
    """The cards of the case's top k that no judgement of it names, in rank order."""
    judged = judgements(case)
    return [card for card in case.retrieved[:k] if card not in judged]


def judged_table(*, results: Results, baseline: Baseline) -> dict[str, dict[str, JudgedCell]]:
    """``{slice: {"judged@k": JudgedCell}}`` for every k of the results, both sides read with the
    current judgements; the baseline side over the cases it shares with the run, when it keeps rankings."""
    ks = sorted(results.k)
    depth = max(ks, default=0)
    # slice → [current sums per k, current n, baseline sums per k, baseline n]
    sums: dict[str, list[Any]] = {}
    for case in results.cases:
        if case.status != "scored":
            continue
        judged = judgements(case)
        now = judged_at(case.retrieved[:depth], judged, ks)
        old = baseline.cases.get(case.id) if baseline.rankings else None
        before = judged_at(old.ranked[:depth], judged, ks) if old is not None and old.status == "scored" else None
        for name in case.slices:
            cell = sums.get(name)
            if cell is None:
                cell = sums[name] = [[0.0] * len(ks), 0, [0.0] * len(ks), 0]
            cell[0] = [a + b for a, b in zip(cell[0], now, strict=True)]
            cell[1] += 1
            if before is not None:
                cell[2] = [a + b for a, b in zip(cell[2], before, strict=True)]
                cell[3] += 1
    return {name: {f"judged@{k}": JudgedCell(
        current=round(cur[i] / n_cur, 6) if n_cur else None, n_current=n_cur,
        baseline=round(base[i] / n_base, 6) if n_base else None, n_baseline=n_base)
        for i, k in enumerate(ks)} for name, (cur, n_cur, base, n_base) in sums.items()}


def judged_at(ranked: Sequence[str], judged: Collection[str], ks: Sequence[int]) -> list[float]:
    """ir_measures' ``Judged@k`` for every k of ``ks`` (ascending), in one pass: the judged cards
    among the first k, over k."""
    positions = [i for i, card in enumerate(ranked) if card in judged]
    return [bisect_left(positions, k) / k for k in ks]


def _relevant(case: CaseResult, level: int) -> tuple[frozenset[str], dict[str, int] | None]:
    """The case's relevant cards at ``level`` and its graded nDCG gains (None: binary)."""
    if not case.grades:
        return (frozenset(case.gold) if level <= 1 else frozenset()), None
    relevant = frozenset(card for card, grade in case.grades.items() if grade >= level)
    if all(grade <= 1 for grade in case.grades.values()) and level <= 1:
        return relevant, None
    return relevant, {card: grade for card, grade in case.grades.items() if grade > 0}


relevant_of = _relevant  # the public name (compare.decisive)


def scores_for(ranked: Sequence[str], scores: Mapping[str, float], *, relevant: frozenset[str],
               gains: Mapping[str, int] | None, extra: Collection[str], metrics: Sequence[str], ks: tuple[int, ...],
               level: int) -> dict[str, float]:
    """``scores`` with each of ``metrics`` it holds recomputed on ``ranked`` with the ``extra`` cards
    relevant too (grade ``level``, at least 1) — a labelling of unjudged cards; other keys kept."""
    names = tuple(name for name in metrics if name in scores)
    if not names:
        return dict(scores)
    gold = relevant | frozenset(extra)
    if gains is not None and extra:
        gains = {**gains, **dict.fromkeys(extra, max(1, level))}
    if not gold and gains is None:
        return {**scores, **dict.fromkeys(names, 0.0)}
    fresh = grid_scores(list(ranked), gold=gold, metrics=_grid(names, ks), gains=gains)
    return {**scores, **{name: value for name, value in fresh.items() if name in scores}}


def rescore_baseline(*, results: Results, baseline: Baseline) -> tuple[Baseline, int]:
    """The baseline with every paired case's retrieval measures recomputed from its stored ranking
    with the current golden set's labels (the run's cases), and how many cases' scores changed —
    so both sides of a comparison are read with the same labels. Unchanged (0) when the baseline
    keeps no rankings or its golden set is the run's (``inputs.cases`` hashes equal)."""
    before = baseline.fingerprint.get("inputs", {}) if isinstance(baseline.fingerprint, Mapping) else {}
    now = results.inputs.get("cases")
    if not baseline.rankings or now is None or not isinstance(before, Mapping) or before.get("cases") == now.sha256:
        return baseline, 0
    wanted = [m for m in results.metrics if is_metric_name(m)]
    ks = tuple(sorted(results.k))
    cases = dict(baseline.cases)
    changed = 0
    for case in results.cases:
        old = cases.get(case.id)
        if case.status != "scored" or old is None or old.status != "scored" or not old.scores:
            continue
        relevant, gains = _relevant(case, results.relevance_level)
        fresh = scores_for(old.ranked, old.scores, relevant=relevant, gains=gains, extra=(), metrics=wanted, ks=ks,
                           level=results.relevance_level)
        fresh = {name: round(value, 6) for name, value in fresh.items()}
        if any(abs(fresh[name] - old.scores[name]) > _SAME for name in fresh):
            cases[case.id] = old.model_copy(update={"scores": fresh})
            changed += 1
    if not changed:
        return baseline, 0
    aggregates = aggregate(_Scored(c.scores, c.slices) for c in cases.values())  # type: ignore[misc]
    return baseline.model_copy(update={"cases": cases, "aggregates": aggregates}), changed


def _condensed_scores(ranked: Sequence[str], case: CaseResult, *, metrics: Sequence[str], ks: tuple[int, ...],
                      level: int, scores: Mapping[str, float]) -> dict[str, float] | None:
    """``scores`` with every retrieval measure recomputed on the condensed ranking (other keys, as
    ``abstention``, kept); None when the stored ranking, scored with the current labels, does not
    give the stored scores back (its labels changed since, or it was cut): then the condensed
    reading keeps that side's standard scores for the case."""
    names = tuple(name for name in metrics if name in scores)
    if not names:
        return None
    grid = _grid(names, ks)
    relevant, gains = _relevant(case, level)
    if not relevant and gains is None:
        return None  # nothing relevant: 0 whatever the ranking
    whole = grid_scores(list(ranked), gold=relevant, metrics=grid, gains=gains)
    if any(abs(whole[name] - scores[name]) > _SAME for name in whole if name in scores):
        return None
    fresh = grid_scores(condense(ranked, judgements(case)), gold=relevant, metrics=grid, gains=gains)
    return {**scores, **{name: value for name, value in fresh.items() if name in scores}}


_SAME = 1e-6  # a baseline rounds its scores to 6 decimals
_GRIDS: dict[tuple[tuple[str, ...], tuple[int, ...]], Any] = {}


def _grid(names: tuple[str, ...], ks: tuple[int, ...]) -> Any:
    """The compiled metric grid of ``names`` at the cutoffs ``ks`` (one per distinct set of score
    keys and cutoffs)."""
    grid = _GRIDS.get((names, ks))
    if grid is None:
        grid = _GRIDS[(names, ks)] = compile_grid([parse_metric(name) for name in names], ks)
    return grid


def condensed_inputs(*, results: Results, baseline: Baseline,
                     metrics: Collection[str] | None = None) -> tuple[Results, Baseline] | None:
    """Both sides rescored on condensed rankings (module docstring), aggregates recomputed, for the
    gate to run on; None when the baseline keeps no rankings (nothing to condense on its side).
    ``metrics``: the measures to rescore (default every one; the gate reads only those it judges).
    Baseline cases the run no longer has keep their scores (their judgements are unknown)."""
    if not baseline.rankings:
        return None
    wanted = [m for m in results.metrics if is_metric_name(m)]
    metrics = wanted if metrics is None else [m for m in wanted if m in metrics]
    level = results.relevance_level
    ks = tuple(sorted(results.k))
    cases: list[CaseResult] = []
    old_cases = dict(baseline.cases)
    for case in results.cases:
        if case.status != "scored" or not case.scores:
            cases.append(case)
            continue
        now = _condensed_scores(case.retrieved, case, metrics=metrics, ks=ks, level=level, scores=case.scores)
        cases.append(case if now is None else case.model_copy(update={"scores": now}))
        old = old_cases.get(case.id)
        if old is not None and old.status == "scored" and old.scores:
            before = _condensed_scores(old.ranked, case, metrics=metrics, ks=ks, level=level, scores=old.scores)
            if before is not None:
                old_cases[case.id] = old.model_copy(update={"scores": before})
    condensed = results.model_copy(update={"cases": cases, "aggregates": aggregate(cases)})
    old_aggregates = aggregate(_Scored(c.scores, c.slices) for c in old_cases.values())  # type: ignore[misc]
    return condensed, baseline.model_copy(update={"cases": old_cases, "aggregates": old_aggregates})


class _Scored:
    """What ``aggregate`` reads of a baseline case: its scores and slices."""

    __slots__ = ("scores", "slices")

    def __init__(self, scores: dict[str, float], slices: list[str]) -> None:
        self.scores, self.slices = scores, slices
