"""Plain data: the inputs (cases, cards, runs) as pydantic models, and the loaded sets of them.

These are the only input shapes the functional core works on. Loaders in ``load/`` build them
from files and turn validation errors into ``file:line`` problems.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

# Names the seeds use for the same field; a case may give each field under one name only.
GOLD_FIELDS = ("gold", "must_cite_one_of", "relevant_doc_ids", "expected_document_ids")
ANSWER_FIELDS = ("answer", "ground_truth_answer")


class Case(BaseModel):
    """One golden question. ``gold`` is disjunctive: any listed card satisfies the case."""

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
        """Card identity: ``parent_id`` where present, else the id (ADR-0023)."""
        return self.parent_id or self.id


class RankedList(BaseModel):
    """What a retriever returned for one case: ids best first, optional scores, or an error."""

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
    format: str  # "jsonl" | "beir"
    lines: dict[str, int] = field(default_factory=dict)
    subset: dict[str, Any] | None = None  # a PR subset's manifest (``retrieval-gate subset``)

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
