"""The shape of the baseline file, and of a difference between its fingerprint and a run's. Pure
data; see docs/formats.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.metrics.names import headline_names, lead_metrics
from retrieval_gate.score.results import Completeness, MetricCell
from retrieval_gate.score.scoring import OVERALL

BASELINE_SCHEMA_VERSION = 4  # 1: no history; 2: no relevance in the fingerprint; 3: no rankings (migrated on load)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryEntry(_Strict):
    """Headline numbers of one baseline refresh, for trend charts."""

    sha: str | None = None
    ref: str | None = None
    timestamp: str | None = None
    headline: dict[str, float] = Field(default_factory=dict)  # metric → overall value
    n: int = 0


class BaselineCase(_Strict):
    """Per-case scores, so that deltas can be paired case by case, and the case's ranking (its
    first max(k) distinct cards, with the retriever's scores where it gives them), so a later run
    can say which card moved where. No text, no embeddings."""

    scores: dict[str, float] = Field(default_factory=dict)
    status: str = "scored"
    slices: list[str] = Field(default_factory=list)
    ranked: list[str] = Field(default_factory=list)
    ranked_scores: list[float] = Field(default_factory=list)


class Baseline(_Strict):
    schema_version: Literal[4] = BASELINE_SCHEMA_VERSION
    suite: str = "default"
    tool_version: str
    sha: str | None = None
    ref: str | None = None
    updated_at: str | None = None
    k: list[int]
    headline_k: int
    metrics: list[str]
    fingerprint: dict[str, Any] = Field(default_factory=dict)
    completeness: Completeness
    aggregates: dict[str, dict[str, MetricCell]]
    cases: dict[str, BaselineCase]
    history: list[HistoryEntry] = Field(default_factory=list)
    rankings: bool = False  # the cases carry their rankings (False: migrated from schema 3 or older)


class ConfigChange(_Strict):
    key: str
    baseline: Any = None
    current: Any = None


# --- The numbers a baseline keeps -------------------------------------------------------------
# The numbers a baseline keeps: a run's headline (hit / recall / nDCG at the headline k on
# ``overall``), rounded to ``DECIMALS``. Pure.

DECIMALS = 6  # every number written to a baseline is rounded to this many decimals


def headline_numbers(
    aggregates: Mapping[str, Mapping[str, MetricCell]], headline_k: int, metrics: list[str] | None = None
) -> tuple[dict[str, float], int]:
    """``({"hit@5": 0.8, "recall@5": …, "ndcg@5": …}, n)`` from the overall slice; n is the
    largest n among them (the cases with gold). With ``metrics`` (the measured ones), what a
    report leads with (``lead_metrics``: a suite of ``Rprec`` alone keeps ``Rprec``); without
    (a schema-1 file's migration), the headline measures."""
    overall = aggregates.get(OVERALL, {})
    names = headline_names(headline_k) if metrics is None else lead_metrics(headline_k, metrics)
    cells = {name: overall[name] for name in names if name in overall}
    return ({name: round(cell.value, DECIMALS) for name, cell in cells.items()},
            max((cell.n for cell in cells.values()), default=0))
