"""Plain data: the inputs (cases, cards, runs) as pydantic models, and the loaded sets of them.

These are the only input shapes the functional core works on. Loaders in ``load/`` build them
from files and turn validation errors into ``file:line`` problems.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

# Other names golden sets use for the same field; a case may give each field under one name only.
GOLD_FIELDS = ("gold", "must_cite_one_of", "relevant_doc_ids", "expected_document_ids")
ANSWER_FIELDS = ("answer", "ground_truth_answer")


class Case(BaseModel):
    """One golden question. ``gold`` is disjunctive: any listed card satisfies the case.

    Gold comes in two forms. A list (``"gold": ["card-a", "card-b"]``) is binary: every listed
    card has grade 1. A mapping (``"gold": {"card-a": 2, "card-b": 1, "card-c": 0}``) is graded,
    as a qrels file: each card's integer grade is its nDCG gain (negative and 0: judged, not
    relevant), and the binary measures count a card relevant when its grade reaches the
    relevance level (``--rel-level``, default 1). Then ``grades`` keeps the mapping and ``gold``
    the cards of grade ≥ 1; ``grades`` is empty for the list form.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str = Field(min_length=1)
    query: str
    gold: tuple[str, ...] = Field(
        default=(),
        validation_alias=AliasChoices(*GOLD_FIELDS),
    )
    kind: Literal["golden", "adversarial"] = "golden"
    locale: str | None = None
    form: Literal["MATCH", "GAP"] | None = None
    hard_class: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    should_refuse: bool | None = None
    answer: str | None = Field(
        default=None, validation_alias=AliasChoices(*ANSWER_FIELDS)
    )
    filter: dict[str, Any] | None = None
    grades: dict[str, int] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _graded_gold(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "grades" in data:
            raise ValueError("unknown field 'grades': give graded gold as \"gold\": {card id: grade}")
        for name in GOLD_FIELDS:
            value = data.get(name)
            if isinstance(value, dict):
                grades = _grades(value)
                data = {**data, name: [card for card, grade in grades.items() if grade >= 1],
                        "grades": grades}
        return data

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is empty")
        return value

    @field_validator("gold", mode="before")
    @classmethod
    def _gold_ids_as_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("must be a list of card ids, not a string")
        if isinstance(value, list | tuple):
            return tuple(str(v) if isinstance(v, int) and not isinstance(v, bool) else v
                         for v in value)
        return value

    @field_validator("gold")
    @classmethod
    def _gold_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not g.strip() for g in value):
            raise ValueError("contains an empty card id")
        seen: dict[str, None] = {}
        for g in value:
            seen.setdefault(g, None)
        return tuple(seen)

    @field_validator("tags")
    @classmethod
    def _tag_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key or "=" in key:
                raise ValueError(f"tag key {key!r} must be non-empty and contain no '='")
        return value

    def slice_values(self) -> dict[str, str]:
        """The slice fields this case belongs to, as ``{field: value}`` (tags as ``tag.key``)."""
        out: dict[str, str] = {"kind": self.kind}
        for name in ("locale", "form", "hard_class"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        for key, value in self.tags.items():
            out[f"tag.{key}"] = value
        return out


def _grades(value: dict[Any, Any]) -> dict[str, int]:
    """A graded gold mapping, checked: non-empty card ids, integer grades (as trec_eval reads)."""
    out: dict[str, int] = {}
    for card, grade in value.items():
        if not isinstance(card, str) or not card.strip():
            raise ValueError("gold contains an empty card id")
        if not isinstance(grade, int) or isinstance(grade, bool):
            raise ValueError(f"gold grade of {card!r} must be an integer, got {grade!r}")
        out[card] = grade
    return out


class Judged(Protocol):
    """What ``judgements`` reads: a golden ``Case``, or its scored ``score.results.CaseResult``."""

    @property
    def gold(self) -> Sequence[str]: ...

    @property
    def grades(self) -> Mapping[str, int]: ...


def judgements(case: Judged, not_relevant: Iterable[str] = ()) -> dict[str, int]:
    """Every judged card of a case with its grade (a new dict): ``grades``, or grade 1 for each
    listed card; and grade 0 for each card judged not relevant — ``not_relevant`` (the sidecar
    ``cases.not-relevant.jsonl``, the draft's pool answers once applied) and the case's own
    ``not_relevant`` where it has one (a scored ``CaseResult``). A judgement is a judgement: a card
    judged not relevant is *judged*; "unjudged" means never judged for that case. What
    ``unjudged@k``, the condensed reading, a lost hit's ``possibly_relevant`` and ``label`` count
    as judged. Gold wins over a sidecar entry that contradicts it."""
    out = dict.fromkeys((*not_relevant, *getattr(case, "not_relevant", ())), 0)
    out.update(case.grades if case.grades else dict.fromkeys(case.gold, 1))
    return out


def relevant_at(case: Case, level: int) -> tuple[str, ...]:
    """The cards the binary measures count as relevant: grade ≥ ``level`` (trec_eval ``-l``)."""
    if not case.grades:
        return case.gold if level <= 1 else ()
    return tuple(card for card, grade in case.grades.items() if grade >= level)


def positive_gains(case: Case) -> dict[str, int] | None:
    """nDCG gains when they differ from binary gains over ``relevant_at(case, 1)``: the cards of
    grade > 0 with their grades, as trec_eval's ``ndcg_cut`` (negative grades gain nothing).
    None when every positive grade is 1 (binary gains)."""
    if not case.grades or all(grade <= 1 for grade in case.grades.values()):
        return None
    return {card: grade for card, grade in case.grades.items() if grade > 0}


class Card(BaseModel):
    """One knowledge-base entry: a card, or a chunk of one (``parent_id`` names the card)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: str
    title: str = ""
    parent_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _ids_as_text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for key in ("id", "parent_id"):
                value = data.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    data[key] = str(value)
        return data

    @property
    def card_id(self) -> str:
        """Card identity: ``parent_id`` where present, else the id (docs/decisions.md)."""
        return self.parent_id or self.id


# The error of a case the run has no ranking for (a run file without it): failed, never dropped.
MISSING_FROM_RUN = "missing from the run"


class RankedList(BaseModel):
    """What a retriever returned for one case: ids best first, optional scores, or an error
    (``MISSING_FROM_RUN`` when the run has no ranking for it)."""

    model_config = ConfigDict(frozen=True)

    ids: tuple[str, ...] = ()
    scores: tuple[float, ...] | None = None
    error: str | None = None
    latency_ms: float | None = None


@dataclass(frozen=True)
class CaseSet:
    """The golden set as loaded: cases in file order, where they came from, and their lines."""

    cases: tuple[Case, ...]
    path: str
    sha256: str
    format: str  # "jsonl" | "beir" | "qrels" (no query text: score only)
    lines: dict[str, int] = field(default_factory=dict)
    subset: dict[str, Any] | None = None  # a PR subset's manifest (``retrieval-gate subset``)
    # some case carries pool provenance: written by ``label apply`` from a draft (its ``source``
    # names the pool's systems) — one sign that the set was judged from a pool (``judgements``)
    pooled: bool = False

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.cases]


@dataclass(frozen=True)
class KnowledgeBase:
    """The knowledge base as loaded: cards in file order, where they came from, and their lines."""

    cards: tuple[Card, ...]
    path: str
    sha256: str
    format: str  # "jsonl" | "beir" | "markdown"
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def card_ids(self) -> frozenset[str]:
        """Card identities (``parent_id`` or id) — what gold ids must resolve to."""
        return frozenset(c.card_id for c in self.cards)

    @property
    def chunk_to_card(self) -> dict[str, str]:
        """Every entry id → its card identity, for mapping a chunk-grained ranking to cards."""
        return {c.id: c.card_id for c in self.cards}
