"""The history's data: what the adapter hands in (``Version``) and what ``retrieval-gate history``
writes as ``<suite>.json`` (``SuiteHistory``, docs/history.md). Pure data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.score.kb_manifest import KbCard

HISTORY_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Version:
    """One committed version of a suite's baseline file, as git holds it: the commit that wrote
    it, its committer date (ISO 8601), its message, the path at that commit; the parsed baseline
    and the KB manifest beside it (None: none there), or ``problem`` (why it could not be read)."""

    sha: str
    date: str
    message: str
    path: str
    baseline: Baseline | None
    kb: dict[str, KbCard] | None = None
    problem: str | None = None
    measured_message: str = ""  # the message of the commit the baseline was measured on ("": unknown)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SettingChange(_Strict):
    key: str
    old: Any = None
    new: Any = None


class KbStep(_Strict):
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    edited: list[str] = Field(default_factory=list)
    unseen: bool = False  # the KB's hash changed but a manifest is missing on one side


class CasesStep(_Strict):
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    gold_changed: bool = False  # the golden set's file changed (its hash, ``inputs.cases``)


class Change(_Strict):
    """What differed from the previous point."""

    settings: list[SettingChange] = Field(default_factory=list)
    kb: KbStep = Field(default_factory=KbStep)
    cases: CasesStep = Field(default_factory=CasesStep)

    def kinds(self) -> list[str]:
        """``["settings", "kb", "golden set"]``, those that changed."""
        out = ["settings"] if self.settings else []
        if self.kb.added or self.kb.removed or self.kb.edited or self.kb.unseen:
            out.append("kb")
        if self.cases.added or self.cases.removed or self.cases.gold_changed:
            out.append("golden set")
        return out


class StepStat(_Strict):
    """The paired step of one measure from the previous point, over the cases both scored."""

    delta: float
    ci: tuple[float, float]
    p: float
    n: int
    significant: bool
    lost: int = 0  # paired cases whose score went down
    gained: int = 0


class SliceCell(_Strict):
    n: int
    headline: dict[str, float] = Field(default_factory=dict)


class Point(_Strict):
    sha: str  # the commit that wrote this version of the baseline
    date: str  # its committer date
    ref: str | None = None  # the ref the baseline was measured on
    measured_sha: str | None = None  # the commit the baseline was measured on
    pr: int | None = None  # the pull / merge request the measured commit's message (else this commit's) names
    pr_url: str | None = None  # its page on the forge (None: the forge is not known)
    subject: str = ""
    n: int
    headline: dict[str, float] = Field(default_factory=dict)
    interval: dict[str, tuple[float, float]] = Field(default_factory=dict)  # 95 % of each headline value
    slices: dict[str, SliceCell] = Field(default_factory=dict)
    change: Change | None = None  # None on the first point
    step: dict[str, StepStat] = Field(default_factory=dict)


class Gap(_Strict):
    sha: str
    date: str
    reason: str


class Drop(_Strict):
    measure: str
    point: int  # index into ``points``
    sha: str
    pr: int | None = None
    pr_url: str | None = None
    delta: float
    p: float
    significant: bool
    changed: list[str] = Field(default_factory=list)  # Change.kinds() of that step


class LostCase(_Strict):
    id: str
    sha: str  # the commit at which it was lost the last time
    point: int


class HistoryStats(_Strict):
    alpha: float
    resamples: int
    seed: int
    test: str = ("exact sign test (binary measures) or sign-flip permutation test, two-sided, over the cases "
                 "both versions scored; Tango score interval or paired t interval (stats/)")


class SuiteHistory(_Strict):
    schema_version: Literal[1] = HISTORY_SCHEMA_VERSION
    suite: str
    path: str
    headline_k: int
    measures: list[str]
    points: list[Point]
    gaps: list[Gap] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)
    lost: list[LostCase] = Field(default_factory=list)
    drops: list[Drop] = Field(default_factory=list)
    cases: dict[str, list[Literal[0, 1] | None]] = Field(default_factory=dict)  # hit@k at each point
    stats: HistoryStats
