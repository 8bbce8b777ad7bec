"""The results file (schema_version 2): what ``score`` and ``eval`` write and every later step reads.

See docs/formats.md for the field-by-field description. Version 2 added ``relevance_level``,
``graded``, ``mean`` and ``unjudged`` (results and cases) and ``grades`` (cases); a version 1
file reads with the values every version 1 file had: level 1, binary gains, the ``relevant``
mean, no unjudged figures.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.score.kb_manifest import KbCard
from retrieval_gate.score.provenance import Provenance

RESULTS_SCHEMA_VERSION = 2

CaseStatus = Literal["scored", "no_gold", "failed"]


class CaseResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    query: str
    kind: str = "golden"
    locale: str | None = None
    form: str | None = None
    hard_class: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    gold: list[str] = Field(default_factory=list)
    grades: dict[str, int] = Field(default_factory=dict)  # graded gold (empty: binary list form)
    retrieved: list[str] = Field(default_factory=list)
    retrieved_scores: list[float] = Field(default_factory=list)  # the retriever's, per card; empty: none given
    scores: dict[str, float] = Field(default_factory=dict)
    unjudged: dict[str, float] = Field(default_factory=dict)  # unjudged@k: top k without judgement
    # cards judged not relevant for this case outside its gold (the sidecar): judged, grade 0; written when any
    not_relevant: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    status: CaseStatus = "scored"
    error: str | None = None
    latency_ms: float | None = None
    slices: list[str] = Field(default_factory=list)
    line: int | None = None  # the case's line in the golden set (JSONL), where known


class MetricCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: float
    n: int


class Completeness(BaseModel):
    """Every expected case is accounted for: expected = scored + no_gold + failed."""

    model_config = ConfigDict(extra="forbid")

    expected: int
    scored: int
    no_gold: int
    failed: int
    failed_ids: list[str] = Field(default_factory=list)
    unknown_run_ids: list[str] = Field(default_factory=list)


class InputInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str
    format: str
    count: int


class Latency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int
    p50_ms: float
    p95_ms: float
    mean_ms: float


class Results(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1, 2] = RESULTS_SCHEMA_VERSION
    tool_version: str
    suite: str = "default"
    created_at: str | None = None
    k: list[int]
    headline_k: int
    metrics: list[str]
    config: dict[str, Any] = Field(default_factory=dict)
    inputs: dict[str, InputInfo] = Field(default_factory=dict)
    completeness: Completeness
    aggregates: dict[str, dict[str, MetricCell]]
    relevance_level: int = 1  # a card is relevant to the binary measures at grade ≥ this
    graded: bool = False  # nDCG used graded gains (some grade > 1)
    mean: Literal["relevant", "trec", "trec-c"] = "relevant"  # which cases each mean covers
    unjudged: dict[str, dict[str, MetricCell]] = Field(default_factory=dict)  # slice → unjudged@k
    latency: Latency | None = None
    extras: dict[str, Any] = Field(default_factory=dict)
    # Versions of corpus, queries, labels, k unit, scorer, aggregation. Optional:
    # files written before it load with None.
    provenance: Provenance | None = None
    # The KB's card-hash manifest (score.kb_manifest): which cards a later run added, removed or
    # edited. None: scored without a KB.
    kb_cards: dict[str, KbCard] | None = None
    # case id → its gold ids that name no card of this run's KB (a card deleted: ``gold-removed``,
    # or never a card). Scored as a loss: each stays in its case's denominator. Written when any.
    gold_missing: dict[str, list[str]] = Field(default_factory=dict, exclude_if=lambda v: not v)
    cases: list[CaseResult]

    def to_json_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


