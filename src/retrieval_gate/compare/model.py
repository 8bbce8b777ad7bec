"""The shape of a comparison. Pure data; see docs/formats.md.

This model and the baseline's (``baseline.model``) are the contract between ``compare`` (which
fills them), ``render`` (which shows them) and ``publish`` (which posts them).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from retrieval_gate.baseline.model import ConfigChange
from retrieval_gate.compare.changes_model import ChangedCase
from retrieval_gate.compare.condensed import JudgedCell
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.compare.kb_changes import KbChanges

# 6 added judgements, needs_labels, rescored_cases, not_cards (needs-labels: decided by the extreme labellings);
# 5 added judged, condensed, unjudged_top_k/_share/_note, gate.status, the verdict needs-labels, gold_removed/_unknown;
COMPARISON_SCHEMA_VERSION = 6  # 2 added p_adjusted, ci_level, mde*, n_needed, possibly_relevant;
# 3 added the unchanged status, ci_method, ci_agrees, p_family, n_changed, MDE methods prior/undetectable,
# changed_cases, kb_changes, stale_gold_cards, baseline_rankings; 4: judged rows one-sided (p_one_sided,
# p_adjusted of it, CI at 1 − 2α/J), only the primary measure judged by default, n_lost, n_gained

RowStatus = Literal["ok", "unchanged", "improved", "regressed", "inconclusive", "underpowered", "below_floor",
                    "new", "missing"]
# The statuses a reviewer must look at: warned about in the comment and annotated on the run.
BAD_STATUSES: frozenset[str] = frozenset({"regressed", "below_floor"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComparisonRow(_Strict):
    slice: str
    metric: str
    baseline: float | None
    current: float | None
    delta: float | None  # paired mean difference, current − baseline, over common cases
    n: int  # cases paired (present in both with this score key)
    n_baseline: int = 0
    n_current: int = 0
    ci: tuple[float, float] | None = None  # at ci_level (stats.paired_interval)
    ci_level: float | None = None  # 1 − alpha; 1 − alpha/J for the J judged rows (schema 2: per row)
    ci_method: Literal["tango", "tango-fractional", "t", "tango+0", "tango-fractional+0", "t+0"] | None = None
    ci_agrees: bool | None = None  # False: the test rejects, the CI holds 0; the status reads the test
    p_value: float | None = None  # exact sign test (binary) or sign-flip test, two-sided, raw
    p_one_sided: float | None = None  # judged row: one-sided p in the direction of Δ (a drop: P(S* ≤ S)), raw
    p_adjusted: float | None = None  # for a judged row: corrected over the judged rows (stats.correction);
    # schema ≤ 3: of the two-sided p
    p_family: float | None = None  # for a reported row: Holm over the reported rows (the title reads it)
    n_changed: int | None = None  # paired cases whose score changed
    n_lost: int | None = None  # … whose score went down (schema 4)
    n_gained: int | None = None  # … whose score went up (schema 4)
    mde: float | None = None  # minimum detectable effect at n (stats.power); None: undetectable
    mde_method: Literal["observed", "prior", "undetectable", "binomial"] | None = None
    n_needed: int | None = None  # underpowered: paired cases needed for an MDE of max_drop
    floor: float | None = None
    max_drop: float | None = None
    status: RowStatus = "ok"
    gated: bool = False  # the gate judges this row (headline metrics on overall, or named by a knob)


class CaseChange(_Strict):
    id: str
    query: str = ""
    metric: str
    baseline: float
    current: float
    delta: float
    slices: list[str] = Field(default_factory=list)
    possibly_relevant: str | None = None  # an unjudged card now where the gold card was: label it


class ComparisonStats(BaseModel):
    """How a comparison's numbers were computed: the words for each column, and the levels, the
    correction and the seed. Each key was added in some schema (``None``: the file predates it) and is
    written only when set, so a file reads back byte for byte. Keys of pre-release files that no
    schema kept (``level``) are dropped on reading."""

    model_config = ConfigDict(extra="ignore")

    delta: str | None = None
    method: str | None = None
    ci: str | None = None
    ci_level: float | None = None  # the reported rows' level, 1 − alpha
    ci_level_judged: float | None = None  # schema 3: 1 − alpha/J; schema 4: 1 − 2·alpha/J
    p_value: str | None = None
    sided: str | None = None  # schema 4: the judged rows are tested one-sided
    correction: Literal["holm", "bh", "none"] | None = None  # schema 2 on, over the judged rows
    judged_rows: int | None = None
    family: str | None = None
    reported_rows: int | None = None
    mde: str | None = None
    power: float | None = None
    resamples: int | None = None
    seed: int | None = None
    alpha: float | None = None

    @model_serializer(mode="wrap")
    def _only_what_is_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}

    @property
    def layout(self) -> Literal[1, 2, 3, 4]:
        """Which schema's statistics these are, read from the keys (the one place that reads old shapes):
        1, a percentile bootstrap CI and no correction; 2, the sign-flip test inverted, judged rows at the
        level the correction leaves them; 3, Tango's / t intervals, judged rows two-sided at 1 − alpha/J
        (Bonferroni); 4, judged rows one-sided, their CI two-sided at 1 − 2·alpha/J."""
        if self.correction is None:
            return 1
        if self.ci_level_judged is None:
            return 2
        return 4 if self.sided is not None else 3


GateStatus = Literal["pass", "fail", "needs-labels"]


class NeedsLabels(BaseModel):
    """A pooled comparison the labels cannot decide (``compare.decisive``): the decisive cards
    (``cards``, in ``cases`` cases), the first ``sitting`` (the fewest of them that, found not
    relevant, settle the verdict: what ``label top-up --baseline`` writes), and the gate's verdict
    with every decisive card labelled in the PR's favour (``if_relevant``) and against it
    (``if_not_relevant``)."""

    model_config = ConfigDict(extra="forbid")

    cards: int
    cases: int
    sitting: int = 0
    if_relevant: GateStatus = "pass"
    if_not_relevant: GateStatus = "fail"


class GateInForce(GateSettings):
    """The gate knobs in force, and the gate's ``status``: ``pass``, ``fail``, or ``needs-labels``
    (a pooled golden set whose unjudged cards, labelled for or against the PR, change whether it
    fails — ``compare.decisive``; in schema 5: the standard and the condensed readings disagreed):
    the labels cannot support a verdict. None: a file from before schema 5 (its ``verdict`` says)."""

    status: GateStatus | None = None


class Reading(_Strict):
    """The gate run on another reading of the same runs (the condensed one: unjudged cards removed
    from each ranking before scoring, ``compare.condensed``): its verdict, failures and judged rows."""

    verdict: GateStatus = "pass"  # this reading's own gate verdict
    failures: list[str] = Field(default_factory=list)
    rows: list[ComparisonRow] = Field(default_factory=list)


def gate_fails(comparison: Comparison) -> bool:
    """The gate fails the job (exit 1): a failed gate, or ``needs-labels`` unless ``gate.unjudged: warn``."""
    if comparison.verdict == "fail":
        return True
    return comparison.verdict == "needs-labels" and comparison.gate.unjudged != "warn"


class Comparison(_Strict):
    schema_version: Literal[1, 2, 3, 4, 5, 6] = COMPARISON_SCHEMA_VERSION
    suite: str = "default"
    headline_k: int
    metrics: list[str]
    baseline_sha: str | None = None
    baseline_ref: str | None = None
    baseline_updated_at: str | None = None
    like_for_like: bool = True
    config_changes: list[ConfigChange] = Field(default_factory=list)
    cases_added: list[str] = Field(default_factory=list)
    cases_removed: list[str] = Field(default_factory=list)
    n_paired: int = 0
    rows: list[ComparisonRow] = Field(default_factory=list)
    lost_hits: list[CaseChange] = Field(default_factory=list)  # most impactful first
    gained_hits: list[CaseChange] = Field(default_factory=list)
    gate: GateInForce = Field(default_factory=GateInForce)  # the knobs in force, and the gate's status
    stats: ComparisonStats = Field(default_factory=ComparisonStats)  # method, levels, correction, seed
    regressed: bool = False  # a judged (gated) row regressed or is below its floor, gate on or not
    failures: list[str] = Field(default_factory=list)  # why the gate failed, one line each
    verdict: GateStatus = "pass"  # needs-labels: the unjudged cards decide (gate.status, compare.decisive)
    # What changed and why (compare.changes): every paired case whose ranking of relevant cards
    # moved, most harmful first; the KB's card diff (None: no manifest on one side); whether the
    # baseline carries rankings (False: ranks before are unknown).
    changed_cases: list[ChangedCase] = Field(default_factory=list)
    kb_changes: KbChanges | None = None
    baseline_rankings: bool = True
    stale_gold_cards: list[str] = Field(default_factory=list)  # most lost hits are on these edited gold cards
    kb_changed_unseen: bool = False  # the KB changed, but a manifest is missing: card-level causes unknown
    # What the labels know (schema 5, compare.condensed): judged@k per slice on both sides (slice →
    # "judged@k" → cell), the gate on the condensed reading (None: the baseline keeps no rankings),
    # the unjudged cards in the PR's top k (headline k, every scored case) and their share of it;
    # unjudged_note: that share exceeds UNJUDGED_NOTE_SHARE (the comment says so, readings agreeing or not)
    judged: dict[str, dict[str, JudgedCell]] = Field(default_factory=dict)
    condensed: Reading | None = None
    unjudged_top_k: int = 0
    unjudged_share: float | None = None
    unjudged_note: bool = False
    # Gold cards gone from this run's KB (case id → card ids): ``gold_removed`` were cards of the
    # baseline's KB (its manifest): this PR deleted them; ``gold_unknown`` were never cards of it, or
    # the baseline has no manifest to tell. Both are scored as losses.
    gold_removed: dict[str, list[str]] = Field(default_factory=dict)
    gold_unknown: dict[str, list[str]] = Field(default_factory=dict)
    # How the golden set was judged (schema 6, compare.judgements): complete (a card outside the gold
    # is not relevant; pass or fail) or pooled (unjudged cards; needs-labels where they decide). None:
    # a file from before schema 6. needs_labels: the decisive cards when the verdict is needs-labels;
    # rescored_cases: baseline cases rescored from their stored rankings with the current labels
    # (the golden set changed since the baseline); not_cards: ids of either side's top k that name no
    # card of the KB (read as not relevant, never asked for).
    judgements: Literal["complete", "pooled"] | None = None
    needs_labels: NeedsLabels | None = Field(default=None, exclude_if=lambda v: v is None)
    rescored_cases: int = 0
    not_cards: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
