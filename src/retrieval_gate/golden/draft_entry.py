"""A drafted query (one line of ``draft.jsonl``) and what labels make of it (``label apply
--draft``). Pure.

A drafted line: ``{"id", "query", "intent", "count", "candidates": [{"card", "sha"}, …]}`` plus
the log's other columns under ``"fields"`` and, for ``apply``'s provenance and its pool figures,
``"pool": {"depth", "systems", "found": {card: [systems]}}``, ``"log"`` and ``"detect"``.
Labels become cases: a query with a card judged relevant gets it as gold (graded when some grade
is above 1), one judged "no answer" an empty gold, one nobody judged stays out; "not relevant"
judgements go to the sidecar. What a labels file may say and how it meets the golden set of
earlier sittings: ``golden.sittings``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.golden.agreement import Record
from retrieval_gate.golden.decisions import Decision, NoAnswer


class Candidate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    card: str = Field(min_length=1)
    sha: str = Field(min_length=1)


class Pool(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    depth: int = Field(ge=1)
    systems: list[str]
    depths: dict[str, int] | None = None  # per system, where they differ (``--pool dense:20,bm25:10``)
    found: dict[str, list[str]] = Field(default_factory=dict)


class DraftEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    intent: str = ""
    count: int = Field(default=1, ge=1)
    fields: dict[str, str] = Field(default_factory=dict)
    candidates: list[Candidate] = Field(default_factory=list)
    pool: Pool | None = None
    log: str = ""
    detect: float | None = None
    # ``label top-up``: a case the golden set already holds; its labels add judgements to it
    top_up: bool | None = None
    # ``label top-up --orphaned``: the case's gold cards gone from the KB; a card judged relevant
    # for it replaces them (``golden.sittings.replace_gone``)
    replaces: list[str] | None = None


def bad_id(value: str) -> bool:
    """An id no line-based file (qrels, a TREC run) can hold: whitespace or a control character."""
    return any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value)


@dataclass
class DraftPlan:
    cases: list[dict[str, Any]] = field(default_factory=list)
    not_relevant: list[Decision] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)
    unjudged: int = 0
    judged_nothing: list[str] = field(default_factory=list)
    unique: dict[str, tuple[int, int]] = field(default_factory=dict)  # system → (relevant found, only it)
    relevant: int = 0
    additions: list[Decision] = field(default_factory=list)  # a top-up's new gold of cases already there


def plan_draft(records: Sequence[Record], *, draft: Mapping[str, DraftEntry], labeller: str, date: str) -> DraftPlan:
    """The new cases (JSON objects, in draft order) and sidecar entries of checked records."""
    plan = DraftPlan()
    grades: dict[str, dict[str, int]] = {}
    said_none: dict[str, str] = {}
    who: dict[str, str] = {}
    for r in records:
        if isinstance(r, NoAnswer):
            said_none[r.case] = r.at
            who.setdefault(r.case, r.labeller)
            continue
        grades.setdefault(r.case, {})[r.card] = r.grade
        who.setdefault(r.case, r.labeller)
        if r.grade == 0:
            plan.not_relevant.append(r)
    last = {(r.case, r.card): r for r in records if isinstance(r, Decision)}
    for entry in draft.values():
        judged = grades.get(entry.id, {})
        gold = {card: g for card, g in judged.items() if g >= 1}
        if entry.top_up:  # a case already there: its relevant cards are added to its gold
            plan.unjudged += not judged
            plan.additions.extend(last[(entry.id, card)] for card in sorted(gold))
            _count_found(plan, entry, gold)
            continue
        if not judged and entry.id not in said_none:
            plan.unjudged += 1
            continue
        if not gold and entry.id not in said_none:
            plan.judged_nothing.append(entry.id)
            continue
        plan.cases.append(case_object(entry, gold=gold, labeller=who.get(entry.id) or labeller, date=date))
        _count_found(plan, entry, gold)
    return plan


def _count_found(plan: DraftPlan, entry: DraftEntry, gold: Mapping[str, int]) -> None:
    """The pool figures: each relevant card, and which systems found it."""
    found = entry.pool.found if entry.pool else {}
    for card in gold:
        plan.relevant += 1
        systems = found.get(card, [])
        for s in systems:
            seen, only = plan.unique.get(s, (0, 0))
            plan.unique[s] = (seen + 1, only + (len(systems) == 1))


def case_object(entry: DraftEntry, *, gold: Mapping[str, int], labeller: str, date: str) -> dict[str, Any]:
    """A JSONL case: id, query, gold (a list, or ``{card: grade}`` when a grade is above 1), the
    intent and the log's columns as tags (``locale`` as the case field), ``source`` provenance."""
    cards = sorted(gold)
    tags = {k: v for k, v in sorted(entry.fields.items()) if k not in ("locale", "intent")}
    if entry.intent:
        tags["intent"] = entry.intent
    obj: dict[str, Any] = {"id": entry.id, "query": entry.query,
                           "gold": {c: gold[c] for c in cards} if any(g > 1 for g in gold.values()) else cards}
    if "locale" in entry.fields:
        obj["locale"] = entry.fields["locale"]
    if tags:
        obj["tags"] = tags
    pool = entry.pool
    obj["source"] = {"log": entry.log, "count": entry.count, "pool_depth": pool.depth if pool else None,
                     "pool_systems": pool.systems if pool else [], "labeller": labeller, "date": date}
    return obj
