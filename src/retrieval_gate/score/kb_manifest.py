"""The KB's card-hash manifest: card id → a short digest of its content, and its title. Pure.

A later run's manifest against the baseline's says which cards were added, removed or edited —
by content, whatever the KB's format (JSONL, BEIR, a Markdown folder) and however it was made
(generated KBs have no useful git history). A card's digest covers every entry that maps to it
(its chunks, by ``parent_id``): their ids, titles, texts and metadata, in id order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from retrieval_gate.models import Card

DIGEST_CHARS = 16  # 64 bits: a collision between two versions of one card is not a concern
TITLE_CHARS = 120  # titles are for display only


class KbCard(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sha: str
    title: str = ""


def kb_manifest(entries: Sequence[Card]) -> dict[str, KbCard]:
    """``{card id: KbCard(sha, title)}`` over the loaded KB's entries, sorted by card id."""
    by_card: dict[str, list[Card]] = {}
    for entry in entries:
        by_card.setdefault(entry.card_id, []).append(entry)
    out: dict[str, KbCard] = {}
    for card_id in sorted(by_card):
        parts = sorted(by_card[card_id], key=lambda e: e.id)
        text = json.dumps([[e.id, e.title, e.text, e.metadata] for e in parts], sort_keys=True,
                          ensure_ascii=False, separators=(",", ":"), default=str)
        title = next((e.title for e in parts if e.title), "")
        out[card_id] = KbCard.model_construct(sha=hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS],
                                              title=title[:TITLE_CHARS])
    return out
