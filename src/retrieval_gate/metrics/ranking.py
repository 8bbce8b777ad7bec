"""Ranking hygiene applied before any metric: card identity and first-occurrence de-duplication."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def dedupe_first(ids: Iterable[str]) -> tuple[str, ...]:
    """Keep each id at its first position: a repeated card never counts twice and never hides
    a later card (ADR-0023 implementation notes; ADR-072 §3)."""
    return tuple(dict.fromkeys(ids))


def to_cards(ids: Iterable[str], chunk_to_card: Mapping[str, str] | None) -> tuple[str, ...]:
    """Map chunk ids to card ids (ids unknown to the map are kept as they are), then de-duplicate."""
    if chunk_to_card is None:
        return dedupe_first(ids)
    return dedupe_first(chunk_to_card.get(i, i) for i in ids)
