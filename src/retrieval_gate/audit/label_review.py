"""Label completeness: top-k cards that no label judges — the review queue to work through
before interpreting a delta (incomplete labels skew recall either way). Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from retrieval_gate.audit.model import Finding, JudgedSlice, LabelReview, ReviewItem
from retrieval_gate.models import Case, judgements
from retrieval_gate.score.scoring import OVERALL, slice_names


def review_item(case: Case, retrieved: Sequence[str], k: int, not_relevant: Collection[str] = ()) -> ReviewItem | None:
    """The case's unjudged top-k cards — those no judgement names: not its gold (any grade, 0
    included) nor a card judged not relevant for it (``not_relevant``, the sidecar) — or None when
    there are none or the case has no gold."""
    if not case.gold:
        return None
    gold = set(case.gold)
    judged = judgements(case, not_relevant)
    top = list(retrieved[:k])
    unjudged = [card for card in top if card not in judged]
    if not unjudged:
        return None
    first_gold = next((i for i, card in enumerate(top) if card in gold), None)
    above = len(unjudged) if first_gold is None else first_gold
    return ReviewItem(case=case.id, hit=first_gold is not None, unjudged=unjudged, above_first_gold=above)


def judged_at_k(*, cases: Sequence[Case], retrieved: Mapping[str, Sequence[str]], k: int,
                not_relevant: Mapping[str, Collection[str]]) -> list[JudgedSlice]:
    """Judged@k per slice (overall first, then by name), as ir_measures: the mean over the slice's
    cases with gold and a non-empty ranking of |judged ∩ top k| / k; judged = the case's gold
    entries of any grade and the cards kept "not relevant" for it (``not_relevant``: case id → cards)."""
    sums: dict[str, list[float]] = {}
    for case in cases:
        top = list(retrieved.get(case.id, ()))[:k]
        if not case.gold or not top:
            continue
        judged = judgements(case, not_relevant.get(case.id, ()))
        share = sum(1 for card in top if card in judged) / k
        for name in slice_names(case):
            sums.setdefault(name, []).append(share)
    order = sorted(sums, key=lambda name: (name != OVERALL, name))
    return [JudgedSlice(slice=name, judged=round(sum(sums[name]) / len(sums[name]), 6), n=len(sums[name]))
            for name in order]


def label_review(
    *, cases: Sequence[Case], retrieved: Mapping[str, Sequence[str]], k: int, limit: int,
    not_relevant: Mapping[str, Collection[str]] | None = None,
) -> tuple[LabelReview, list[ReviewItem]]:
    """Every case with unjudged cards in its top k, most unjudged-above-the-gold first (a miss
    first of all): those are the cases where a missing label most likely changes the number.
    ``frequent_cards``: the unjudged cards by how many top-k lists hold them. Returns the review
    (its lists cut at ``limit``) and every item."""
    items = []
    counter: Counter[str] = Counter()
    reviewed = 0
    for case in cases:
        if case.id not in retrieved or not case.gold:
            continue
        reviewed += 1
        item = review_item(case, retrieved[case.id], k, (not_relevant or {}).get(case.id, ()))
        if item is not None:
            items.append(item)
            counter.update(item.unjudged)
    order = {case.id: i for i, case in enumerate(cases)}
    items.sort(key=lambda it: (it.hit, -it.above_first_gold, -len(it.unjudged), order[it.case]))
    frequent = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    review = LabelReview(k=k, cases_reviewed=reviewed, cases_with_unjudged=len(items), queue=items[:limit],
                         queue_total=len(items), frequent_cards=frequent,
                         judged=judged_at_k(cases=cases, retrieved=retrieved, k=k, not_relevant=not_relevant or {}))
    return review, items


def review_findings(items: Sequence[ReviewItem], *, k: int) -> list[Finding]:
    """One finding per missed case whose top k holds unjudged cards: before reading that miss as a
    retrieval failure, check whether one of those cards answers the case."""
    return [
        Finding(kind="unjudged_top_k", severity="medium", cases=(it.case,), cards=tuple(it.unjudged),
                reason=f"missed at k={k}, and its top {k} holds {len(it.unjudged)} card"
                       f"{'s' if len(it.unjudged) != 1 else ''} no label judges: check them for a missing label")
        for it in items if not it.hit
    ]
