"""``retrieval-gate label top-up``'s pure part (docs/golden-set.md "Top up"): the cards that the
systems being compared put in their top k and that no judgement covers, per case, ready to be
written as a draft folder that ``label apply --draft`` applies like any draft.

- **Judged** (``judged_pairs``): a card is judged for a case when the case's gold holds it at any
  grade (grade 0 included) or the "not relevant" sidecar keeps it for that case. Unjudged means
  never judged for that case — as ir_measures' Judged@k reads it.
- **Top-up** (``unjudged_pool``): for every case (not only the changed ones), the union over the
  runs of the unjudged cards in each run's top ``depth``, each once, in a hashed order
  (``golden.draw.pool``: the page says nothing of which system found a card).
- **Orphaned** (``orphaned_cases``): cases whose gold names a card the KB no longer holds; they
  are drafted again for re-judging: the unjudged cards of the runs' tops and of a BM25 pool
  over the KB (the shell's), so a new gold card can take the gone one's place.
- **Stale** (``stale_pairs``): the (case, card) pairs ``label apply`` set aside as stale
  (``stale.jsonl``), offered again while the card is still in the KB.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from retrieval_gate.golden.draw import pool


@dataclass(frozen=True)
class RunTop:
    """One compared system: its name and, per case id, its ranked card ids."""

    name: str
    ranked: Mapping[str, Sequence[str]]


@dataclass
class TopUp:
    """Per case id: the cards to judge in page order and, per card, the systems that put it in
    their top ``depth`` (``found``); why each case is there (``reasons``: ``unjudged``,
    ``orphaned``, ``stale``)."""

    cards: dict[str, list[str]] = field(default_factory=dict)
    found: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    judged_in_top: dict[str, tuple[int, int]] = field(default_factory=dict)  # system → (judged, shown) in top k

    @property
    def total(self) -> int:
        return sum(len(c) for c in self.cards.values())


def judged_pairs(gold: Mapping[str, Mapping[str, int]], sidecar: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Case id → every card judged for it: its gold entries at any grade, and the sidecar's."""
    out = {case: set(cards) for case, cards in gold.items()}
    for case, card in sidecar:
        out.setdefault(case, set()).add(card)
    return out


def orphaned_cases(gold: Mapping[str, Mapping[str, int]], *, kb_cards: Collection[str]) -> dict[str, list[str]]:
    """Case id → its gold cards (grade ≥ 1) that the KB no longer holds, for the cases with any."""
    out = {}
    for case, cards in gold.items():
        gone = sorted(card for card, grade in cards.items() if grade >= 1 and card not in kb_cards)
        if gone:
            out[case] = gone
    return out


def stale_pairs(rows: Iterable[tuple[str, str]], *, cases: Collection[str],
                kb_cards: Collection[str]) -> dict[str, list[str]]:
    """Case id → the stale cards to judge again: pairs of a case of the golden set whose card the
    KB still holds (a card gone from it cannot be judged), each once, in input order."""
    out: dict[str, list[str]] = {}
    for case, card in rows:
        if case in cases and card in kb_cards and card not in out.get(case, []):
            out.setdefault(case, []).append(card)
    return out


def unjudged_pool(runs: Sequence[RunTop], *, judged: Mapping[str, Collection[str]], depth: int,
                  cases: Sequence[str], kb_cards: Collection[str], seed: int = 0,
                  orphaned: Collection[str] = (), stale: Mapping[str, Sequence[str]] | None = None) -> TopUp:
    """The top-up of ``cases`` (in that order): per case the unjudged cards of every run's top
    ``depth`` that the KB holds, plus the ``stale`` cards; ``orphaned`` cases are marked so. Cases
    with nothing to judge are left out. ``judged_in_top``: per run, the judged cards and all cards
    of its top ``depth`` over the cases it ranked (Judged@k's parts)."""
    stale = stale or {}
    out = TopUp()
    counts: dict[str, list[int]] = {run.name: [0, 0] for run in runs}
    for case in cases:
        seen = judged.get(case, ())
        tops: dict[str, list[str]] = {}
        for run in runs:
            top = list(dict.fromkeys(run.ranked.get(case, ())))[:depth]
            counts[run.name][0] += sum(card in seen for card in top)
            counts[run.name][1] += len(top)
            tops[run.name] = [c for c in top if c in kb_cards and c not in seen]
        extra = [c for c in stale.get(case, ()) if c in kb_cards]
        if extra:
            tops["(stale)"] = extra
        order, found = pool(tops, depth=max(depth, len(extra)), case=case, seed=seed)
        if not order:
            continue
        out.cards[case] = order
        out.found[case] = {card: [s for s in systems if s != "(stale)"] for card, systems in found.items()}
        reasons = []
        if any(c not in seen for name, cs in tops.items() if name != "(stale)" for c in cs):
            reasons.append("unjudged")
        if case in orphaned:
            reasons.append("orphaned")
        if extra:
            reasons.append("stale")
        out.reasons[case] = reasons
    out.judged_in_top = {name: (j, n) for name, (j, n) in counts.items()}
    return out
