"""The labelling queue and the merge of a reviewer's decisions into the golden set. Pure.

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

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.compare.changes_model import ChangedCase
from retrieval_gate.models import GOLD_FIELDS, Card
from retrieval_gate.score.kb_manifest import KbCard

SNIPPET_CHARS = 280


class Decision(BaseModel):
    """A reviewer's judgement of one card for one case."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(min_length=1)
    card: str = Field(min_length=1)
    grade: int = Field(ge=0, le=100)
    sha: str = Field(min_length=1)
    at: str = ""
    labeller: str = ""


class NoAnswer(BaseModel):
    """A labeller's word that no card of the KB answers a drafted query (``n`` on the labelling
    page): the query becomes a case with empty gold."""

    model_config = ConfigDict(extra="forbid")

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


@dataclass(frozen=True)
class LabelPlan:
    """What applying decisions does: gold entries to add (case, card, grade), "not relevant"
    pairs to keep, decisions refused (line, reason) and those with nothing to do (line, reason)."""

    relevant: list[Decision] = field(default_factory=list)
    not_relevant: list[Decision] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)


def plan_labels(*, decisions: Sequence[tuple[int, Decision]], gold: Mapping[str, Mapping[str, int]],
                manifest: Mapping[str, KbCard], not_relevant: Collection[tuple[str, str]]) -> LabelPlan:
    """``gold``: case id → its judged cards and grades (list-form gold: grade 1). A later decision
    on the same pair replaces an earlier one. Refused: an unknown case or card, or a card whose
    content hash differs from the one judged."""
    last: dict[tuple[str, str], tuple[int, Decision]] = {}
    for line, d in decisions:
        last[(d.case, d.card)] = (line, d)
    plan = LabelPlan()
    for (case, card), (line, d) in sorted(last.items(), key=lambda item: item[1][0]):
        if case not in gold:
            plan.refused.append((line, f"case {case!r} is not in the golden set"))
        elif card not in manifest:
            plan.refused.append((line, f"card {card!r} is not in the knowledge base"))
        elif manifest[card].sha != d.sha:
            plan.refused.append((line, f"card {card!r} changed since it was judged (hash {d.sha} then, "
                                       f"{manifest[card].sha} now): judge it again"))
        elif card in gold[case]:
            plan.skipped.append((line, f"{case} already judges {card} (grade {gold[case][card]})"))
        elif d.grade == 0 and (case, card) in not_relevant:
            plan.skipped.append((line, f"{case}: {card} is already kept as not relevant"))
        elif d.grade == 0:
            plan.not_relevant.append(d)
        else:
            plan.relevant.append(d)
    return plan


def add_to_jsonl(text: str, additions: Sequence[Decision]) -> str:
    """The JSONL golden set with each case's new gold cards: appended to a list-form ``gold`` (a
    grade above 1 turns the case graded: ``{card: grade}``, the old cards at 1), or set in a graded
    mapping. Other lines are kept byte for byte; an edited line keeps its key order."""
    by_case: dict[str, list[Decision]] = {}
    for d in additions:
        by_case.setdefault(d.case, []).append(d)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        stripped = line.strip().lstrip("\ufeff")  # a BOM before the first line: read as the loader reads it
        if not stripped.startswith("{"):
            continue
        obj = json.loads(stripped)
        adds = by_case.pop(str(obj.get("id")), None) if isinstance(obj, dict) else None
        if not adds:
            continue
        key = next((name for name in GOLD_FIELDS if name in obj), "gold")  # the field the line uses
        gold = obj.get(key) or []
        if isinstance(gold, list) and any(d.grade > 1 for d in adds):
            gold = {str(card): 1 for card in gold}
        if isinstance(gold, list):
            gold = [*gold, *(d.card for d in adds)]
        else:
            gold = {**gold, **{d.card: d.grade for d in adds}}
        obj[key] = gold
        lines[i] = (("\ufeff" if line.startswith("\ufeff") else "") + json.dumps(obj, ensure_ascii=False)
                    + ("\r" if line.endswith("\r") else ""))
    return "\n".join(lines)


def add_to_qrels(text: str, additions: Sequence[Decision]) -> str:
    """The qrels file with one line per new judgement, in the file's own layout (BEIR's
    ``query-id corpus-id score`` or TREC's ``query 0 doc grade``, tab- or space-separated)."""
    data = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    sample = data[-1] if data else "q\td\t1"
    sep = "\t" if "\t" in sample else " "
    trec = len(sample.split()) == 4
    rows = [sep.join([d.case, "0", d.card, str(d.grade)] if trec else [d.case, d.card, str(d.grade)])
            for d in additions]
    head = text if text.endswith("\n") or not text else text + "\n"
    return head + "".join(row + "\n" for row in rows)


def not_relevant_lines(decisions: Sequence[Decision]) -> str:
    """The sidecar's new lines: one JSON object per "not relevant" decision."""
    return "".join(json.dumps({"case": d.case, "card": d.card, "sha": d.sha, "at": d.at}, ensure_ascii=False,
                              sort_keys=True) + "\n" for d in decisions)
