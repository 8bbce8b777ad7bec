"""What changed and why: every paired case whose ranking of relevant cards moved, the ranks of
its gold cards before → after, the cards that displaced them, and the cause. Pure.

A case is listed when it lost or gained a hit at the headline k, or when one of its gold cards
moved within the stored ranking (the first max(k) distinct cards; rank ``None`` = not there).
``displaced_by``: for a case that got worse, the non-gold cards now ranked above its best gold
card that were not that high before (or whose content this run changed) — KB-changed cards first,
then those now at or above the gold card's old rank, then by rank; at most ``DISPLACERS_SHOWN``.

``cause`` is the first that applies, in this order (``CAUSES``):

- ``gold-removed`` / ``gold-edited``: a gold card of the case was removed from, or changed (or
  added) in, this run's KB — by the card-hash manifests, so only where both sides have one;
- ``displacer-added`` / ``displacer-edited``: a displacing card is new, or its content changed;
- ``config``: the retrieval settings changed (model, chunking, retriever, k: ``config.*``, ``k``);
- ``card-changed``: another card of the case's rankings (before or after, first max(k)) was added,
  edited or removed in this run's KB — so a case never reads "no change found to its cards"
  beside its own ``(edited)`` row;
- ``unjudged``: a card no judgement names (gold of any grade, or judged not relevant: the
  sidecar) now outranks the gold card (the labelling queue) —
  never while the KB changed without a manifest on one side (an edit to the case's own cards
  cannot be ruled out);
- ``ranking``: no change found to the case's cards or the settings, yet it ranked differently.

Sorted most harmful first: lost hits, then other cases that got worse (each by the largest drop
of nDCG at the headline k, then the id), then the cases that got better, then the gained hits
(largest gain first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrieval_gate.baseline.fingerprint import same_vectors
from retrieval_gate.baseline.model import Baseline, BaselineCase, ConfigChange
from retrieval_gate.compare.changes_model import ChangedCase, Displacer, GoldRank, Movement
from retrieval_gate.compare.kb_changes import KbChange, kb_diff
from retrieval_gate.compare.model import CaseChange, Comparison
from retrieval_gate.models import judgements
from retrieval_gate.score.kb_manifest import KbCard
from retrieval_gate.score.results import CaseResult, Results

DISPLACERS_SHOWN = 3
_ORDER: dict[Movement, int] = {"lost-hit": 0, "worse": 1, "better": 2, "gained-hit": 3}


def retrieval_config_changed(changes: Sequence[ConfigChange]) -> bool:
    """The retrieval settings changed (not only the inputs or how the numbers are scored)."""
    return any((c.key == "k" or c.key.startswith("config.")) and not same_vectors(c) for c in changes)


def changed_cases(
    *,
    current: Mapping[str, CaseResult],
    baseline_cases: Mapping[str, BaselineCase],
    paired_ids: Sequence[str],
    headline_k: int,
    rankings: bool,
    kb_before: Mapping[str, KbCard] | None,
    kb_after: Mapping[str, KbCard] | None,
    config_changed: bool,
    kb_changed_unseen: bool = False,
) -> list[ChangedCase]:
    """The changed cases, most harmful first (module docstring). ``rankings``: the baseline
    carries rankings (else only lost and gained hits are listed, with unknown ranks before).
    ``kb_changed_unseen``: the KB changed but a manifest is missing on one side, so an edit to the
    case's own cards cannot be ruled out: no case is then put in the labelling queue (``unjudged``)."""
    manifests = kb_before is not None and kb_after is not None
    out = []
    for case_id in paired_ids:
        case = current[case_id]
        entry = _changed(case=case, old=baseline_cases[case_id], k=headline_k, rankings=rankings,
                         kb_before=kb_before if manifests else None, kb_after=kb_after if manifests else None,
                         config_changed=config_changed, kb_changed_unseen=kb_changed_unseen)
        if entry is not None:
            out.append(entry)
    out.sort(key=lambda c: (_ORDER[c.movement], _harm(c), c.id))
    return out


def _harm(change: ChangedCase) -> float:
    delta = change.metric_after - change.metric_before
    return delta if _ORDER[change.movement] < 2 else -delta


def _card_change(card: str, before: Mapping[str, KbCard] | None, after: Mapping[str, KbCard] | None) -> KbChange | None:
    if before is None or after is None:
        return None
    if card not in after:
        return "removed" if card in before else "unchanged"
    if card not in before:
        return "added"
    return "edited" if before[card].sha != after[card].sha else "unchanged"


def _changed(*, case: CaseResult, old: BaselineCase, k: int, rankings: bool, kb_before: Mapping[str, KbCard] | None,
             kb_after: Mapping[str, KbCard] | None, config_changed: bool,
             kb_changed_unseen: bool) -> ChangedCase | None:
    if not case.gold:
        return None
    hit, ndcg = f"hit@{k}", f"ndcg@{k}"
    new, prev = case.scores, old.scores
    if hit not in new or hit not in prev:
        return None
    lost, gained = round(prev[hit]) > round(new[hit]), round(prev[hit]) < round(new[hit])
    after_rank = {card: i for i, card in enumerate(case.retrieved, start=1)}
    before_rank = {card: i for i, card in enumerate(old.ranked, start=1)} if rankings else {}
    gold = [GoldRank(card=g, rank_before=before_rank.get(g), rank_after=after_rank.get(g),
                     kb_change=_card_change(g, kb_before, kb_after)) for g in case.gold]
    moved = any(g.rank_before != g.rank_after for g in gold) if rankings else False
    if not (lost or gained or moved):
        return None
    metric = ndcg if ndcg in new and ndcg in prev else hit
    before, after = round(prev[metric], 6), round(new[metric], 6)
    movement = _movement(lost=lost, gained=gained, delta=after - before, gold=gold, depth=len(case.retrieved))
    displacers = _displacers(case=case, gold=gold, before_rank=before_rank, rankings=rankings,
                             kb_before=kb_before, kb_after=kb_after) if movement in ("lost-hit", "worse") else []
    return ChangedCase(id=case.id, query=case.query, slices=list(case.slices), line=case.line, gold=gold,
                       movement=movement, metric=metric, metric_before=before, metric_after=after,
                       displaced_by=displacers,
                       cause=_cause(gold=gold, displacers=displacers, config_changed=config_changed,
                                    kb_changed_unseen=kb_changed_unseen,
                                    cards_changed=_ranking_changed(case.retrieved, old.ranked if rankings else [],
                                                                   kb_before, kb_after)))


def _ranking_changed(after: Sequence[str], before: Sequence[str], kb_before: Mapping[str, KbCard] | None,
                     kb_after: Mapping[str, KbCard] | None) -> bool:
    """Some card of either ranking was added, edited or removed in this run's KB."""
    return any(_card_change(card, kb_before, kb_after) in ("added", "edited", "removed")
               for card in {*after, *before})


def _movement(*, lost: bool, gained: bool, delta: float, gold: Sequence[GoldRank], depth: int) -> Movement:
    if lost:
        return "lost-hit"
    if gained:
        return "gained-hit"
    if delta:
        return "worse" if delta < 0 else "better"
    beyond = depth + 1

    def total(ranks: list[int | None]) -> int:
        return sum(r if r is not None else beyond for r in ranks)

    return "worse" if total([g.rank_after for g in gold]) > total([g.rank_before for g in gold]) else "better"


def _displacers(*, case: CaseResult, gold: Sequence[GoldRank], before_rank: Mapping[str, int], rankings: bool,
                kb_before: Mapping[str, KbCard] | None, kb_after: Mapping[str, KbCard] | None) -> list[Displacer]:
    gold_ids = {g.card for g in gold}
    judged = judgements(case)  # the cards judged not relevant (the sidecar) are judged too
    after_ranks = [g.rank_after for g in gold if g.rank_after is not None]
    before_ranks = [g.rank_before for g in gold if g.rank_before is not None]
    best_after = min(after_ranks) if after_ranks else None
    best_before = min(before_ranks) if before_ranks else None
    end = best_after - 1 if best_after is not None else len(case.retrieved)
    scores = case.retrieved_scores if len(case.retrieved_scores) == len(case.retrieved) else []
    gold_score = scores[best_after - 1] if scores and best_after is not None else None
    found = []
    for rank, card in enumerate(case.retrieved[:end], start=1):
        if card in gold_ids:
            continue
        change = _card_change(card, kb_before, kb_after)
        was = before_rank.get(card)
        climbed = not rankings or was is None or was > rank
        if not (climbed or change in ("added", "edited")):
            continue
        score = scores[rank - 1] if scores else None
        margin = round(score - gold_score, 4) if score is not None and gold_score is not None else None
        title = kb_after[card].title if kb_after is not None and card in kb_after else ""
        found.append(Displacer(card=card, title=title, rank=rank, rank_before=was, score=score,
                               margin_over_gold=margin, judged=card in judged,
                               kb_change=change))
    found.sort(key=lambda d: (d.kb_change in (None, "unchanged"),
                              best_before is not None and d.rank > best_before, d.rank))
    return found[:DISPLACERS_SHOWN]


def _cause(*, gold: Sequence[GoldRank], displacers: Sequence[Displacer], config_changed: bool,
           kb_changed_unseen: bool = False, cards_changed: bool = False) -> str:
    if any(g.kb_change == "removed" for g in gold):
        return "gold-removed"
    if any(g.kb_change in ("edited", "added") for g in gold):
        return "gold-edited"
    if any(d.kb_change == "added" for d in displacers):
        return "displacer-added"
    if any(d.kb_change == "edited" for d in displacers):
        return "displacer-edited"
    if config_changed:
        return "config"
    if cards_changed:
        return "card-changed"
    if not kb_changed_unseen and any(not d.judged for d in displacers):
        return "unjudged"
    return "ranking"


def stale_gold_cards(changes: Sequence[ChangedCase]) -> list[str]:
    """The gold cards this run's KB edited whose cases lost their hit — when such cases are most
    (more than half) of the lost hits a deleted gold card does not explain; else empty. A deleted
    card is not an edit: its cases are ``Comparison.gold_removed``'s, with words of their own."""
    lost = [c for c in changes if c.movement == "lost-hit" and c.cause != "gold-removed"]
    stale = [c for c in lost if c.cause == "gold-edited"]
    if not lost or 2 * len(stale) <= len(lost):
        return []
    return sorted({g.card for c in stale for g in c.gold if g.kb_change in ("edited", "added")})


def fold_hints(lost_hits: Sequence[CaseChange], changes: Sequence[ChangedCase]) -> list[CaseChange]:
    """The lost hits with ``possibly_relevant`` kept only where the cause is ``unjudged``: a card
    is never offered for labelling when the case's gold card was edited or removed, or when a KB
    or settings change explains the loss."""
    cause = {c.id: c.cause for c in changes}
    return [c if c.possibly_relevant is None or cause.get(c.id) == "unjudged"
            else c.model_copy(update={"possibly_relevant": None}) for c in lost_hits]


BOTH_READINGS = "the edit may have removed the answer (check the card) or the labels are stale (update the cases)"


def stale_words(n: int) -> str:
    """``2 gold cards of lost cases were edited by this PR: the edit may have removed the answer
    (check the card) or the labels are stale (update the cases)`` — both readings, neither
    asserted (the verdict's words)."""
    return (f"{n} gold card{'s' if n != 1 else ''} of lost cases {'were' if n != 1 else 'was'} edited by this PR: "
            f"{BOTH_READINGS}")


def stale_line(cards: Sequence[str]) -> str:
    """The gate's failure line for lost hits on gold cards this PR edited: the cards and both
    readings (the same words as the comment)."""
    names = ", ".join(cards[:5]) + (", …" if len(cards) > 5 else "")
    n = len(cards)
    return (f"{n} gold card{'s' if n != 1 else ''} of lost cases {'were' if n != 1 else 'was'} edited by this PR "
            f"({names}): {BOTH_READINGS}")


def gate_reasons(comparison: Comparison) -> tuple[list[str], list[str]]:
    """The gate's failure lines split into (the failed rules, the hints): the stale-labels line
    (``2 gold cards of lost cases were edited by this PR …``) explains, it is not a rule."""
    hint = stale_line(comparison.stale_gold_cards) if comparison.stale_gold_cards else None
    rules = [line for line in comparison.failures if line != hint]
    return rules, [line for line in comparison.failures if line == hint]


def gold_gone(*, results: Results, kb_before: Mapping[str, KbCard] | None
              ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The run's gold ids that name no card of its KB (``Results.gold_missing``; else from its KB
    manifest), split: ``removed`` — cards of the baseline's KB (its manifest), so this PR deleted
    them; ``unknown`` — never cards of it (a typo), or no manifest of before to tell."""
    missing = dict(results.gold_missing)
    if not missing and results.kb_cards is not None:
        cards = results.kb_cards
        missing = {c.id: [g for g in c.gold if g not in cards] for c in results.cases
                   if any(g not in cards for g in c.gold)}
    removed: dict[str, list[str]] = {}
    unknown: dict[str, list[str]] = {}
    for case_id, gone in sorted(missing.items()):
        was = [g for g in gone if kb_before is not None and g in kb_before]
        never = [g for g in gone if g not in was]
        if was:
            removed[case_id] = was
        if never:
            unknown[case_id] = never
    return removed, unknown


def attach_changes(comparison: Comparison, *, results: Results, baseline: Baseline,
                   kb_before: Mapping[str, KbCard] | None) -> Comparison:
    """``comparison`` with its changed cases, the KB's card diff, the lost hits' hints folded in,
    and — when the gate failed and most lost hits are on gold cards this run's KB edited — the
    stale-labels line first among the failures (the verdict is unchanged)."""
    kb_after = results.kb_cards
    current = {case.id: case for case in results.cases}
    paired = sorted(set(current) & set(baseline.cases))
    unseen = (kb_before is None or kb_after is None) and any(c.key == "inputs.kb" for c in comparison.config_changes)
    changes = changed_cases(current=current, baseline_cases=baseline.cases, paired_ids=paired,
                            headline_k=results.headline_k, rankings=baseline.rankings, kb_before=kb_before,
                            kb_after=kb_after, config_changed=retrieval_config_changed(comparison.config_changes),
                            kb_changed_unseen=unseen)
    stale = stale_gold_cards(changes)
    failures = list(comparison.failures)
    if stale and comparison.verdict == "fail":
        failures.insert(0, stale_line(stale))
    diff = kb_diff(before=kb_before, after=kb_after) if kb_before is not None and kb_after is not None else None
    removed, unknown = gold_gone(results=results, kb_before=kb_before)
    return comparison.model_copy(update={
        "gold_removed": removed, "gold_unknown": unknown,
        "changed_cases": changes, "kb_changes": diff, "baseline_rankings": baseline.rankings,
        "kb_changed_unseen": unseen,
        "stale_gold_cards": stale, "lost_hits": fold_hints(comparison.lost_hits, changes), "failures": failures,
    })
