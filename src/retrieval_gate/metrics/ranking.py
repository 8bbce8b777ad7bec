"""Ranking hygiene applied before any metric: card identity and first-occurrence de-duplication."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def dedupe_first(ids: Iterable[str]) -> tuple[str, ...]:
    """Keep each id at its first position: a repeated card never counts twice and never hides
    a later card (docs/decisions.md, "De-duplication before the cut")."""
    return tuple(dict.fromkeys(ids))


def to_cards(
    ids: Sequence[str], chunk_to_card: Mapping[str, str] | None, limit: int | None = None
) -> tuple[str, ...]:
    """Map chunk ids to card ids (ids unknown to the map are kept as they are), then de-duplicate.

    ``limit``: return only the first ``limit`` distinct cards — the same prefix as without it,
    computed without de-duplicating the whole (possibly over-fetched) ranking."""
    if limit is None or limit >= len(ids):
        return _cards(ids, chunk_to_card)
    window = max(limit, 1)
    while True:
        cards = _cards(ids[:window], chunk_to_card)
        if len(cards) >= limit or window >= len(ids):
            return cards[:limit]
        window *= 2


def _cards(ids: Iterable[str], chunk_to_card: Mapping[str, str] | None) -> tuple[str, ...]:
    if chunk_to_card is None:
        return dedupe_first(ids)
    return dedupe_first(chunk_to_card.get(i, i) for i in ids)
