"""The filter false-exclusion rate (docs/decisions.md, "Filters have their own measure"). Pure.

The false-exclusion rate counts the catastrophic case — a filter that removes every eligible gold
card before retrieval runs, which no retriever or reranker can recover from:

    filter_false_exclusion_rate = #(filtered cases whose every eligible gold card fails the filter)
                                  / #(filtered cases with ≥ 1 eligible gold card)

recall@k keeps the ORIGINAL eligible gold set as its denominator; gold is never rebuilt after
filtering (that would drop exactly the failures and report 100 %).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from retrieval_gate.errors import MeasurementError
from retrieval_gate.filters import matches
from retrieval_gate.models import Case


@dataclass(frozen=True)
class FalseExclusion:
    """The measured rate and what it was measured over."""

    rate: float
    excluded: int  # filtered cases whose every eligible gold card fails the filter
    measured: int  # filtered cases with ≥ 1 eligible gold card (the denominator)
    filtered: int  # cases carrying a filter
    excluded_ids: tuple[str, ...] = field(default=())

    def as_extras(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "excluded": self.excluded,
            "measured": self.measured,
            "filtered_cases": self.filtered,
            "excluded_ids": list(self.excluded_ids),
        }


def filter_false_exclusion_rate(
    *,
    cases: Iterable[Case],
    card_metadata: Mapping[str, Mapping[str, Any] | Sequence[Mapping[str, Any]]],
    eligible: Set[str] | None = None,
) -> FalseExclusion:
    """The rate over the cases that carry a ``filter`` (see the module docstring).

    ``card_metadata`` maps each card id to its metadata — or to the metadata of each of its
    chunks, as the retrievers see them (a card survives when any chunk passes); ``eligible`` is
    the set of cards the caller is entitled to see (default: every card). A gold card outside it
    is not a false exclusion — it belongs in an entitlement test. Raises ``MeasurementError``
    when no filtered case has an eligible gold card: an unmeasured rate must never pass as 0.
    """
    allowed = set(card_metadata) if eligible is None else set(eligible) & set(card_metadata)
    filtered = measured = 0
    excluded: list[str] = []
    for case in cases:
        if case.filter is None:
            continue
        filtered += 1
        eligible_gold = [g for g in case.gold if g in allowed]
        if not eligible_gold:
            continue
        measured += 1
        if not any(_survives(card_metadata[g], case.filter) for g in eligible_gold):
            excluded.append(case.id)
    if measured == 0:
        raise MeasurementError(
            f"filter false-exclusion rate: none of the {filtered} filtered case(s) has an eligible "
            "gold card, so the rate cannot be measured (it is not 0)"
        )
    return FalseExclusion(rate=len(excluded) / measured, excluded=len(excluded), measured=measured,
                          filtered=filtered, excluded_ids=tuple(excluded))


def _survives(metadata: Mapping[str, Any] | Sequence[Mapping[str, Any]], where: Mapping[str, Any]) -> bool:
    if isinstance(metadata, Mapping):
        return matches(metadata, where=where)
    return any(matches(m, where=where) for m in metadata)


def false_exclusion_extras(
    *, cases: Sequence[Case], units: Iterable[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any] | None:
    """``Results.extras["filter_false_exclusion"]``: ``None`` when no case has a filter; else the
    measured rate, or ``rate: null`` with the reason when it cannot be measured (never 0).
    ``units`` are ``(card id, metadata)`` of every indexed chunk — the metadata retrievers filter on."""
    if not any(case.filter is not None for case in cases):
        return None
    per_card: dict[str, list[Mapping[str, Any]]] = {}
    for card_id, metadata in units:
        per_card.setdefault(card_id, []).append(metadata)
    try:
        return filter_false_exclusion_rate(cases=cases, card_metadata=per_card).as_extras()
    except MeasurementError as exc:
        return {"rate": None, "excluded": 0, "measured": 0,
                "filtered_cases": sum(1 for c in cases if c.filter is not None), "excluded_ids": [],
                "note": str(exc)}
