"""The report's labelling queue. Pure.

For each changed case whose cause is ``unjudged`` (a card no gold entry judges now outranks the
gold card), those unjudged displacing cards, with the card's title, a snippet of its text and its
content hash (``score.kb_manifest``: the hash a decision carries, so a card edited after it was
judged is not labelled by a stale decision). Pairs already decided "not relevant" (the sidecar
file beside the cases, docs/reports.md "Labelling") are not asked again. The judgement a reviewer
downloads, and its merge into the golden set: ``golden.decisions``, ``golden.sittings``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from retrieval_gate.compare.changes_model import ChangedCase
from retrieval_gate.models import Card
from retrieval_gate.score.kb_manifest import KbCard

SNIPPET_CHARS = 280


@dataclass(frozen=True)
class QueueItem:
    case: str
    query: str
    card: str
    rank: int
    title: str
    snippet: str
    sha: str
    gold: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {"case": self.case, "query": self.query, "card": self.card, "rank": self.rank, "title": self.title,
                "snippet": self.snippet, "sha": self.sha, "gold": self.gold}


def snippets(cards: Sequence[Card]) -> dict[str, str]:
    """Card id → the start of its first entry's text (entries in id order), whitespace collapsed."""
    first: dict[str, Card] = {}
    for entry in cards:
        if entry.card_id not in first or entry.id < first[entry.card_id].id:
            first[entry.card_id] = entry
    out = {}
    for card_id, entry in first.items():
        text = re.sub(r"\s+", " ", entry.text).strip()
        out[card_id] = text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 1].rstrip() + "…"
    return out


def label_queue(*, changes: Sequence[ChangedCase], manifest: Mapping[str, KbCard], snippet: Mapping[str, str],
                decided: Collection[tuple[str, str]] = ()) -> list[QueueItem]:
    """The unjudged cards outranking the gold of each ``unjudged`` case, in the changes' order
    (most harmful first), then by rank; cards not in the KB any more, or already decided, left out."""
    out = []
    for change in changes:
        if change.cause != "unjudged":
            continue
        for d in sorted(change.displaced_by, key=lambda d: d.rank):
            if d.judged or d.card not in manifest or (change.id, d.card) in decided:
                continue
            out.append(QueueItem(case=change.id, query=change.query, card=d.card, rank=d.rank,
                                 title=manifest[d.card].title, snippet=snippet.get(d.card, ""),
                                 sha=manifest[d.card].sha, gold=[g.card for g in change.gold]))
    return out
