"""Gold that no retriever can return, or that the case's own filter hides (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrieval_gate.audit.model import AuditCard, Finding
from retrieval_gate.filters import matches
from retrieval_gate.models import Case


def card_problem(card: AuditCard, *, min_chars: int) -> tuple[str, str] | None:
    """``(kind, reason)`` when the card cannot be retrieved or carries too little to answer."""
    text = card.text.strip()
    if not text:
        return "empty_gold_card", "is empty (or whitespace only) after loading"
    if card.chunks == 0:
        return "gold_card_without_chunks", "produces no chunk, so no retriever can return it"
    if len(text) < min_chars:
        return "short_gold_card", f"has {len(text)} characters of text (< {min_chars})"
    return None


def survives_filter(card: AuditCard, where: Mapping | None) -> bool:
    """A card passes a filter when any of its entries (chunks) does, as the retrievers see it."""
    return any(matches(m, where=where) for m in card.metadata) if card.metadata else matches({}, where=where)


def orphaned_gold(*, cases: Sequence[Case], cards: Mapping[str, AuditCard]) -> list[Finding]:
    """One finding per case whose gold names a card the KB no longer has (a deleted card: eval
    scores the case as a loss, ``gold-removed``): high when none of its gold cards is left."""
    out = []
    for case in cases:
        gone = [gold for gold in case.gold if gold not in cards]
        if not gone:
            continue
        left = len(gone) < len(case.gold)
        noun = "gold id" if len(gone) == 1 else "gold ids"
        out.append(Finding(kind="orphaned_gold", severity="low" if left else "high", cases=(case.id,),
                           cards=tuple(sorted(gone)),
                           reason=f"{noun} {', '.join(gone)} name{'s' if len(gone) == 1 else ''} no card of the KB "
                                  f"(deleted?): restore the card or update the case"
                                  + (" (another gold card can still win the case)" if left else "")))
    return out


def unwinnable_findings(
    *, cases: Sequence[Case], cards: Mapping[str, AuditCard], min_chars: int
) -> list[Finding]:
    """One finding per (case, problem kind). High severity when no gold card of the case is
    usable (the case cannot be won), low when another gold card still can be."""
    out = []
    for case in cases:
        if not case.gold:
            continue
        problems: dict[str, tuple[str, list[str]]] = {}
        bad: set[str] = set()
        for gold in case.gold:
            card = cards.get(gold)
            if card is None:  # validate reports it; the audit does not repeat it
                continue
            found = card_problem(card, min_chars=min_chars)
            if found is None and case.filter is not None and not survives_filter(card, case.filter):
                found = ("gold_filtered_out", "fails the case's own metadata filter")
            if found is not None:
                kind, reason = found
                problems.setdefault(kind, (reason, []))[1].append(gold)
                bad.add(gold)
        unwinnable = bad == set(case.gold)
        for kind, (reason, golds) in sorted(problems.items()):
            noun = "gold card" if len(golds) == 1 else "gold cards"
            verb = reason if len(golds) == 1 else reason.replace("is empty", "are empty").replace(
                "produces", "produce").replace("has ", "have ").replace("fails", "fail")
            tail = ": the case cannot be won" if unwinnable else " (another gold card can still win the case)"
            out.append(Finding(kind=kind, severity="high" if unwinnable else "low", cases=(case.id,),
                               cards=tuple(sorted(golds)),
                               reason=f"{noun} {', '.join(golds)} {verb}{tail}",
                               data={"unwinnable": unwinnable}))
    return out
