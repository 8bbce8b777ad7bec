"""Which unjudged cards decide a pooled comparison, and whether any do. Pure.

On a ``pooled`` golden set (``compare.judgements``) a card no judgement covers is *unjudged*: the
standard reading counts it as not relevant, a lower bound. The gate's decision is **decided** when
no labelling of the unjudged cards can change it; else the verdict is ``needs-labels`` and the
cards that can change it are asked for, in an order that settles the verdict soonest.

**The two extreme labellings.** A labelling is one set R of relevant cards per case, the same for
both sides (a card answers a question or not, whoever ranks it). Per case, with U_pr and U_b the
unjudged cards of the PR's and of the baseline's top d (d: the largest cutoff the gate judges):

- *for the PR*: R = U_pr \\ U_b (every card only the PR surfaces answers; the baseline's do not);
- *against the PR*: R = U_b \\ U_pr.

Cards both sides surface stay not relevant in both. For hit@k (the primary measure) these are the
largest and the smallest paired difference any labelling gives the case: a case hit on both sides
by its gold is fixed; a miss on both can become a gain (a card only the PR surfaces) or a loss; a
hit on one side alone can become a tie. For the graded measures they are the one-sided labellings
of Carterette, Allan & Sitaraman (2006, "Minimal test collections for retrieval evaluation"): the
cards only one system ranks are those whose labels move the difference. The gate runs on both
(its own rules: ``compare.gate``); the extremes bracket every labelling, the standard reading
(R = ∅) included, so when they give the same decision it is the standard reading's, and nothing
needs labelling.

**The decisive cards.** Otherwise the cases whose judged scores differ between the two extremes
can still flip; in them, the unjudged cards whose label moves a judged score's paired difference
(or the PR's value, for a floor), alone or on top of either extreme, are decisive — never more
than the unjudged cards of either side's top d in those cases. They are asked heaviest first: a
card's weight is the difference of the nDCG discounts 1/log2(1 + rank) at which the two sides rank
it (0 outside the top d) — the card one system puts first and the other does not rank counts most,
as in Carterette et al.'s weights for the sign of ΔDCG.

**The first sitting** (what ``label top-up --baseline`` writes). The standard reading's verdict
is one of the two extremes' — the other is the *threatening* one (for the PR when the standard
reading fails, against it when it passes). The sitting is the fewest cases, taken cheapest first
(fewest decisive cards of the threatening side, then the heaviest), whose threatening cards, found
not relevant, make the threatening extreme give the standard verdict (a binary search over the
count): labelled so, the verdict is settled; where some are relevant, the next comparison asks
the next sitting. On a pooled set most unjudged cards are not relevant (the pool found most of
what answers), so a sitting usually settles it — Carterette et al.'s "judge until the sign of the
difference is known", in sittings rather than one card at a time.

**Not cards.** A ranked id that names no card of this run's KB (``Results.kb_cards``: a run file's
``run:`` or ``http:`` ids, a card deleted since) cannot be labelled: it is read as not relevant and
never counted or asked for (``not_cards``). Without a KB manifest every id is taken for a card.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from retrieval_gate.baseline.model import DECIMALS, Baseline, BaselineCase
from retrieval_gate.compare.condensed import relevant_of, scores_for
from retrieval_gate.models import judgements
from retrieval_gate.score.aggregate import aggregate
from retrieval_gate.score.results import CaseResult, Results

Judge = Callable[[Results, Baseline], str]  # the gate's verdict on (results, baseline): "pass" or "fail"


@dataclass(frozen=True)
class DecisiveCard:
    case: str
    card: str
    weight: float
    rank: int | None  # in the PR's top d (1-based); None: only the baseline ranks it there
    rank_baseline: int | None


@dataclass
class Decision:
    """``best`` / ``worst``: the gate's verdict labelled for / against the PR; ``cards``: the
    decisive cards in asking order (empty when decided), the first ``sitting`` of them the first
    sitting; ``cases``: the cases that can still flip."""

    best: str
    worst: str
    cards: list[DecisiveCard] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    sitting: int = 0

    @property
    def decided(self) -> bool:
        return self.best == self.worst


def is_card(card: str, kb_cards: Collection[str] | None) -> bool:
    """A ranked id names a card of the run's KB (every id does when the KB is unknown)."""
    return kb_cards is None or card in kb_cards


def not_cards(results: Results, baseline: Baseline | None, *, depth: int) -> list[str]:
    """The distinct ids of either side's top ``depth`` that name no card of this run's KB, sorted
    (none when the run has no KB manifest)."""
    kb = results.kb_cards
    if kb is None:
        return []
    out: set[str] = set()
    for case in results.cases:
        if case.status != "scored":
            continue
        out.update(c for c in case.retrieved[:depth] if c not in kb)
        old = baseline.cases.get(case.id) if baseline is not None and baseline.rankings else None
        if old is not None and old.status == "scored":
            out.update(c for c in old.ranked[:depth] if c not in kb)
    return sorted(out)


def judged_depth(metrics: Collection[str], results: Results) -> int:
    """The largest cutoff among the judged measures (a measure with none: the run's largest k)."""
    depth = 0
    for name in metrics:
        _, at, k = name.partition("@")
        depth = max(depth, int(k) if at and k.isdigit() else max(results.k))
    return depth or results.headline_k


def _discount(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / math.log2(rank + 1)


def decide(*, results: Results, baseline: Baseline, metrics: Collection[str], floors: Collection[str],
           judge: Judge) -> Decision:
    """The gate's decision under both extreme labellings and, when they differ, the decisive
    cards (module docstring). ``metrics``: the measures the gate judges; ``floors``: those with a
    floor on some slice (their current value counts, paired or not); ``judge``: the gate's verdict
    on a pair of inputs (``compare.comparison``, gated rows only)."""
    depth = judged_depth(metrics, results)
    level = results.relevance_level
    ks = tuple(sorted(results.k))
    kb = results.kb_cards
    names = sorted(metrics)
    best_cases: list[CaseResult] = []
    worst_cases: list[CaseResult] = []
    best_old: dict[str, BaselineCase] = dict(baseline.cases)
    worst_old: dict[str, BaselineCase] = dict(baseline.cases)
    open_cases: list[tuple[CaseResult, list[str], list[str], BaselineCase | None]] = []
    for case in results.cases:
        if case.status != "scored" or not case.scores:
            best_cases.append(case)
            worst_cases.append(case)
            continue
        judged = judgements(case)
        pr_top = list(dict.fromkeys(case.retrieved))[:depth]
        u_pr = [c for c in pr_top if c not in judged and is_card(c, kb)]
        old = baseline.cases.get(case.id) if baseline.rankings else None
        if old is not None and (old.status != "scored" or not old.scores):
            old = None
        u_b = [c for c in list(dict.fromkeys(old.ranked))[:depth] if c not in judged and is_card(c, kb)] \
            if old is not None else []
        if not u_pr and not u_b:
            best_cases.append(case)
            worst_cases.append(case)
            continue
        relevant, gains = relevant_of(case, level)
        for_pr, against = set(u_pr) - set(u_b), set(u_b) - set(u_pr)
        sides = []
        for extra in (for_pr, against):
            now = scores_for(case.retrieved, case.scores, relevant=relevant, gains=gains, extra=extra,
                             metrics=names, ks=ks, level=level)
            before = scores_for(old.ranked, old.scores, relevant=relevant, gains=gains, extra=extra,
                                metrics=names, ks=ks, level=level) if old is not None else None
            sides.append((now, before))
        (now_best, before_best), (now_worst, before_worst) = sides
        best_cases.append(case.model_copy(update={"scores": now_best}))
        worst_cases.append(case.model_copy(update={"scores": now_worst}))
        if old is not None and before_best is not None and before_worst is not None:
            best_old[case.id] = old.model_copy(update={"scores": before_best})
            worst_old[case.id] = old.model_copy(update={"scores": before_worst})
        if _moves(now_best, before_best, now_worst, before_worst, names, floors):
            open_cases.append((case, u_pr, u_b, old))
    best = judge(_with_cases(results, best_cases, floors), _with_old(baseline, best_old))
    worst = judge(_with_cases(results, worst_cases, floors), _with_old(baseline, worst_old))
    decision = Decision(best=best, worst=worst)
    if decision.decided:
        return decision
    cards: list[DecisiveCard] = []
    for case, u_pr, u_b, old in open_cases:
        relevant, gains = relevant_of(case, level)
        for_pr, against = set(u_pr) - set(u_b), set(u_b) - set(u_pr)

        def vector(extra: set[str], case: CaseResult = case, old: BaselineCase | None = old,
                   relevant: frozenset[str] = relevant, gains: dict[str, int] | None = gains) -> tuple[float, ...]:
            now = scores_for(case.retrieved, case.scores, relevant=relevant, gains=gains, extra=extra,
                             metrics=names, ks=ks, level=level)
            before = scores_for(old.ranked, old.scores, relevant=relevant, gains=gains, extra=extra,
                                metrics=names, ks=ks, level=level) if old is not None else None
            return _vector(now, before, names, floors)

        bases = [(set(), vector(set())), (for_pr, vector(for_pr)), (against, vector(against))]
        pr_rank = {c: i + 1 for i, c in enumerate(dict.fromkeys(case.retrieved)) if i < depth}
        b_rank = {c: i + 1 for i, c in enumerate(dict.fromkeys(old.ranked)) if i < depth} if old is not None else {}
        asked = False
        for card in dict.fromkeys([*u_pr, *u_b]):
            if not any(vector(extra | {card}) != value for extra, value in bases if card not in extra):
                continue
            asked = True
            r, rb = pr_rank.get(card), b_rank.get(card)
            cards.append(DecisiveCard(case=case.id, card=card, weight=round(abs(_discount(r) - _discount(rb)), 6),
                                      rank=r, rank_baseline=rb))
        if asked:
            decision.cases.append(case.id)
    cards = order_cards(cards)
    # the first sitting: the fewest cases whose decisive cards, found not relevant, settle the verdict
    standard = judge(results, baseline)
    threatened = "best" if best != standard else "worst"
    side = {case.id: set(u_pr) - set(u_b) if threatened == "best" else set(u_b) - set(u_pr)
            for case, u_pr, u_b, _ in open_cases}
    mine: dict[str, list[DecisiveCard]] = {}
    for card in cards:
        if card.card in side[card.case]:
            mine.setdefault(card.case, []).append(card)
    order = sorted(mine, key=lambda c: (len(mine[c]), -max(x.weight for x in mine[c]), c))
    plain = {case.id: (case, old) for case, _, _, old in open_cases}
    extreme_cases = best_cases if threatened == "best" else worst_cases
    extreme_old = best_old if threatened == "best" else worst_old

    calmed: dict[str, tuple[CaseResult, BaselineCase | None]] = {}
    for case_id in order:  # each case as the standard reading reads it (its unjudged cards not relevant)
        case, old = plain[case_id]
        calmed[case_id] = (case.model_copy(update={"scores": _standard(case, level, names, ks)}),
                           old.model_copy(update={"scores": _standard(case, level, names, ks, old=old)})
                           if old is not None else None)

    def settled(count: int) -> bool:
        """The threatened extreme gives the standard verdict once the first ``count`` cases' cards
        of its side are judged not relevant (those cases read as the standard reading reads them)."""
        calm = set(order[:count])
        now = [calmed[case.id][0] if case.id in calm else case for case in extreme_cases]
        before = dict(extreme_old)
        for case_id in calm:
            old_now = calmed[case_id][1]
            if old_now is not None and case_id in before:
                before[case_id] = old_now
        return judge(_with_cases(results, now, floors), _with_old(baseline, before)) == standard

    low, high = 0, len(order)
    while low < high:  # the verdict settles with more cases calmed: the smallest count that settles it
        middle = (low + high) // 2
        if settled(middle):
            high = middle
        else:
            low = middle + 1
    first = [card for case_id in order[:low] for card in mine[case_id]]
    chosen = {(c.case, c.card) for c in first}
    decision.cards = [*first, *(c for c in cards if (c.case, c.card) not in chosen)]
    decision.sitting = len(first)
    return decision


def _standard(case: CaseResult, level: int, names: Sequence[str], ks: tuple[int, ...],
              old: BaselineCase | None = None) -> dict[str, float]:
    """The case's scores (the baseline's, with ``old``) with no unjudged card relevant."""
    relevant, gains = relevant_of(case, level)
    ranked, scores = (old.ranked, old.scores) if old is not None else (case.retrieved, case.scores)
    return scores_for(ranked, scores, relevant=relevant, gains=gains, extra=(), metrics=names, ks=ks, level=level)


def order_cards(cards: Sequence[DecisiveCard]) -> list[DecisiveCard]:
    """Heaviest first; then the PR's rank, the case id and the card id (a stable order)."""
    return sorted(cards, key=lambda c: (-c.weight, c.rank if c.rank is not None else math.inf, c.case, c.card))


def _moves(now_best: Mapping[str, float], before_best: Mapping[str, float] | None, now_worst: Mapping[str, float],
           before_worst: Mapping[str, float] | None, names: Sequence[str], floors: Collection[str]) -> bool:
    return _vector(now_best, before_best, names, floors) != _vector(now_worst, before_worst, names, floors)


def _vector(now: Mapping[str, float], before: Mapping[str, float] | None, names: Sequence[str],
            floors: Collection[str]) -> tuple[float, ...]:
    """What the gate reads of a case: each judged measure's paired difference (when paired), and
    the PR's value of each measure with a floor, rounded as the comparison rounds them. A case only
    the PR has moves no paired difference: its cards decide only a floor."""
    out: list[float] = []
    for name in names:
        if name not in now:
            continue
        if before is not None and name in before:
            out.append(round(round(now[name], DECIMALS) - round(before[name], DECIMALS), DECIMALS))
        if name in floors:  # a floor reads the PR's value, paired or not
            out.append(round(now[name], DECIMALS))
    return tuple(out)


def _with_cases(results: Results, cases: list[CaseResult], floors: Collection[str] = ()) -> Results:
    """``results`` with these cases; the aggregates recomputed only when a floor reads them (a
    regression is judged on the paired cases; the means only say that a row exists)."""
    update: dict[str, object] = {"cases": cases}
    if floors:
        update["aggregates"] = aggregate(cases)
    return results.model_copy(update=update)


def _with_old(baseline: Baseline, cases: dict[str, BaselineCase]) -> Baseline:
    """``baseline`` with these cases (its aggregates kept: the gate reads them only for a row's
    presence)."""
    return baseline.model_copy(update={"cases": cases})
