"""The labelling queue and the judgement a reviewer downloads. Pure (the merge into the golden
set: ``audit.sittings``).

The queue: for each changed case whose cause is ``unjudged`` (a card no gold entry judges now
outranks the gold card), those unjudged displacing cards, with the card's title, a snippet of its
text and its content hash (``score.kb_manifest``: the hash a decision carries, so a card edited
after it was judged is not labelled by a stale decision). Pairs already decided "not relevant"
(the sidecar file beside the cases, docs/reports.md "Labelling") are not asked again.

A decision (one line of the downloaded ``labels.jsonl``): ``{"case", "card", "grade", "sha",
"at"}`` and an optional ``"labeller"``; grade 0 = not relevant, ≥ 1 = relevant at that grade. The
drafting page (``cases draft``) also writes ``{"case", "no_answer": true}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from retrieval_gate.compare.changes_model import ChangedCase
from retrieval_gate.models import Card
from retrieval_gate.score.kb_manifest import KbCard

SNIPPET_CHARS = 280


class Decision(BaseModel):
    """A reviewer's judgement of one card for one case. The grade is a JSON integer (``true`` or
    ``1.5`` is no grade); fields a newer page adds are ignored."""

    model_config = ConfigDict(extra="ignore")

    case: str = Field(min_length=1)
    card: str = Field(min_length=1)
    grade: int = Field(ge=0, le=100)
    sha: str = Field(min_length=1)
    at: str = ""
    labeller: str = ""

    @field_validator("grade", mode="before")
    @classmethod
    def _integer(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer grade (0 not relevant, 1 or more relevant), not "
                             f"{json.dumps(value)[:40]}")
        return value


class NoAnswer(BaseModel):
    """A labeller's word that no card of the KB answers a drafted query (``n`` on the labelling
    page): the query becomes a case with empty gold."""

    model_config = ConfigDict(extra="ignore")

    case: str = Field(min_length=1)
    no_answer: Literal[True]
    at: str = ""
    labeller: str = ""


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


def not_relevant_lines(decisions: Sequence[Decision]) -> str:
    """The sidecar's new lines: one JSON object per "not relevant" decision."""
    return "".join(json.dumps({"case": d.case, "card": d.card, "sha": d.sha, "at": d.at}, ensure_ascii=False,
                              sort_keys=True) + "\n" for d in decisions)
