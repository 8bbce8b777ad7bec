"""The shapes of "what changed and why": the cases whose ranking of relevant cards moved
(``compare.changes``; the KB's card diff is ``compare.kb_changes``). Pure data; see docs/formats.md."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.compare.kb_changes import KbChange

Cause = Literal["gold-removed", "gold-edited", "displacer-added", "displacer-edited", "config", "card-changed",
                "unjudged", "ranking"]
# The order causes are tried in, and the order they are counted in: the first that applies wins.
CAUSES: tuple[Cause, ...] = ("gold-removed", "gold-edited", "displacer-added", "displacer-edited", "config",
                             "card-changed", "unjudged", "ranking")
Movement = Literal["lost-hit", "worse", "better", "gained-hit"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GoldRank(_Strict):
    card: str
    rank_before: int | None = None  # 1-based among the first max(k) distinct cards; None: not there
    rank_after: int | None = None
    kb_change: KbChange | None = None  # None: no manifest


class Displacer(_Strict):
    """A card now ranked above where the case's best gold card was."""

    card: str
    title: str = ""
    rank: int  # its rank in this run
    rank_before: int | None = None  # its rank in the baseline (None: not in the first max(k))
    score: float | None = None  # the retriever's score, where it gives one
    margin_over_gold: float | None = None  # score − the best gold card's score in this run (None: unknown)
    judged: bool = False  # a gold entry names it (any grade)
    kb_change: KbChange | None = None  # None: no manifest on one side


class ChangedCase(_Strict):
    id: str
    query: str = ""
    slices: list[str] = Field(default_factory=list)
    line: int | None = None  # the case's line in the golden set, where known
    gold: list[GoldRank] = Field(default_factory=list)
    movement: Movement
    metric: str  # nDCG at the headline k (hit@k when nDCG is not measured)
    metric_before: float
    metric_after: float
    displaced_by: list[Displacer] = Field(default_factory=list)
    cause: Cause
