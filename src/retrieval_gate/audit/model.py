"""Plain data of the audit: what it reads (cards as the retriever sees them) and what it writes
(findings, the coverage matrix, the label review queue, provenance)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.score.provenance import Provenance

AUDIT_SCHEMA_VERSION = 1

Severity = Literal["high", "medium", "low"]
SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2}

# Every kind of finding, with what it means (docs/audit.md repeats this table).
KINDS: dict[str, str] = {
    "near_duplicate_cards": "cards whose word shingles overlap at Jaccard ≥ threshold",
    "ambiguous_gold": ("a case's gold card has a near-duplicate twin that is not gold: retrieving the twin "
                       "scores a miss"),
    "query_leakage": "the query's words appear (near-)verbatim inside a card",
    "duplicate_query": "two or more cases ask the same question (after normalisation)",
    "near_duplicate_query": "two or more cases ask nearly the same question",
    "split_query_overlap": "a query in one split is the same as or near a query in another split",
    "split_shared_gold": "cases of different splits share a gold card group (a card or its near-duplicates)",
    "empty_gold_card": "a gold card has no text after loading",
    "short_gold_card": "a gold card is shorter than min_card_chars",
    "gold_card_without_chunks": "a gold card produces no chunk, so no retriever can return it",
    "gold_filtered_out": "a gold card fails the case's own metadata filter",
    "empty_coverage_cell": "a combination of the coverage fields with no case",
    "underpowered_cell": "a coverage cell whose n cannot detect the gate's max_drop",
    "unjudged_top_k": "a missed case whose top k holds cards no label judges (a missing label?)",
    "orphaned_gold": ("a gold id names no card of the KB (a card deleted: the case is scored as a loss, "
                      "gold-removed, until the card is restored or the case updated)"),
}


@dataclass(frozen=True)
class AuditCard:
    """One card as the audit sees it: its text (title and every entry of the card joined), the
    metadata of each of its entries (what filters are evaluated on), and how many chunks it
    produces (None = unknown)."""

    id: str
    text: str
    metadata: tuple[Mapping[str, Any], ...] = ({},)
    chunks: int | None = None


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    severity: Severity
    cases: tuple[str, ...] = ()
    cards: tuple[str, ...] = ()
    cell: str | None = None  # coverage findings name a cell instead of cases or cards
    reason: str
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> tuple[str, tuple[str, ...], tuple[str, ...], str]:
        """What identifies a finding across two audits: its kind and the ids (or cell) it names."""
        return (self.kind, self.cases, self.cards, self.cell or "")


def sort_findings(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_RANK[f.severity], f.kind, f.cases, f.cards, f.cell or "", f.reason))


class CoverageCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    values: dict[str, str]
    n: int  # cases in the cell
    n_gold: int  # cases with gold (the n of hit@k)
    hits: int | None = None  # hit@k hits among them, with --results
    mde: float | None = None  # best-case paired MDE of hit@k (stats.power; None when n_gold = 0)
    detectable: bool | None = None  # mde ≤ max_drop


class Coverage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fields: list[str]
    max_drop: float
    alpha: float
    power: float
    metric: str
    cells: list[CoverageCell]
    empty_cells: list[dict[str, str]]
    empty_cells_listed: bool = True  # False when the cross product was too large to list
    required_n: int | None = None  # n whose best-case MDE reaches max_drop


class ReviewItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case: str
    hit: bool
    unjudged: list[str]  # cards in the top k that no label judges, in rank order
    above_first_gold: int  # how many of them rank above the first gold card (all, on a miss)


class JudgedSlice(BaseModel):
    """Judged@k of one slice: the mean, over its cases with gold and a ranking, of the share of
    the top k that a judgement covers (a gold entry of any grade, or a kept "not relevant")."""

    model_config = ConfigDict(extra="forbid")

    slice: str
    judged: float
    n: int


class LabelReview(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int
    cases_reviewed: int
    cases_with_unjudged: int
    queue: list[ReviewItem]
    queue_total: int
    frequent_cards: list[tuple[str, int]]  # unjudged cards by how many top-k lists hold them
    judged: list[JudgedSlice] = Field(default_factory=list)  # Judged@k per slice, overall first


class AuditReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = AUDIT_SCHEMA_VERSION
    tool_version: str
    params: dict[str, Any]
    provenance: Provenance
    counts: dict[str, int]  # cases, cards, cases_with_gold, findings
    by_kind: dict[str, int]
    by_severity: dict[str, int]
    findings: list[Finding]
    coverage: Coverage | None = None
    label_review: LabelReview | None = None

    def to_json_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# --- What a pull request introduced -----------------------------------------------------------
# Which findings a pull request introduced: the PR's audit against its base's, matched by kind
# and the ids (or cell) each finding names. Pure.

def introduced(*, current: Sequence[Finding], base: Sequence[Finding]) -> list[Finding]:
    """Findings of ``current`` with no finding of the same key in ``base``, in report order."""
    known = {f.key for f in base}
    return sort_findings([f for f in current if f.key not in known])


def resolved(*, current: Sequence[Finding], base: Sequence[Finding]) -> list[Finding]:
    """Findings of ``base`` that ``current`` no longer has."""
    return introduced(current=base, base=current)
