"""The gate: which rows it judges, the status of a row, and the verdict. Pure.

Keys of ``floors`` and ``max_drop`` are ``metric`` (the ``overall`` slice) or ``metric:slice``
(``hit@5:locale=pt-BR``). Metric names are normalised (``nDCG@10`` → ``ndcg@10``).

Row status (Δ = paired mean difference, tol = the row's max drop, p = the paired test's p-value —
exact sign test for binary measures, sign-flip test otherwise, ``stats.sign_flip``; two-sided for a
reported row; for a judged row **one-sided** in the direction of Δ (a regression gate asks "did it
get worse?": 5 lost and none gained is p = 1/32), adjusted for the family of judged rows by
``gate.correction`` (Holm by default, ``stats.power``) when more than one row is judged;
MDE = the row's minimum detectable effect at the level and sidedness it is judged at,
``stats.power``), in this order:

- ``below_floor``: a floor is configured for the row and current < floor;
- ``new`` / ``missing``: the metric × slice exists only in the current run / only in the baseline;
- ``inconclusive``: both exist but no case is paired;
- ``unchanged``: no paired case changed (every difference is 0) — nothing to judge, no mark;
- ``regressed`` / ``improved``: ``Δ < −tol`` / ``Δ > tol`` and (``p < alpha`` or significance not
  required);
- ``underpowered``: a drop was seen (``Δ < 0``), it is not significant (``p ≥ alpha``) and the
  MDE exceeds tol (or no drop is detectable at this n): a drop of the tolerance would likely go
  unseen here;
- ``inconclusive``: ``|Δ| > tol`` and not significant otherwise — a gain larger than the
  tolerance, or a drop larger than it where the n could have seen such a drop (MDE ≤ tol), that
  the data cannot tell apart from noise;
- ``ok``: the rest (``|Δ| ≤ tol``, or significant but within the tolerance).

Judged ("gated") rows: the primary measure — hit@k at the headline k on ``overall`` (the first
headline measure measured; for a suite that measures none of them, the report's lead:
``metrics.names.lead_metrics``) — plus every row named by a ``max_drop`` or
``floors`` key. recall@k and nDCG@k are reported beside it, not judged: for single-gold cases they
carry the same information as hit@k, and judging all three with a correction that ignores that
would triple the p-value (docs/decisions.md). Other slices and metrics are reported, never
judged, unless named.
Floors are judged whenever given; regressions only with ``fail_on_regression``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.errors import UsageError
from retrieval_gate.metrics import parse_metric
from retrieval_gate.metrics.names import PLAIN_METRICS, lead_metrics
from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.stats.multiplicity import CORRECTIONS, Correction

_EPS = 1e-12
CORRECTION_NAMES = dict(zip(CORRECTIONS, ("Holm", "BH", "uncorrected"), strict=True))  # as the gate's reasons say

RowKey = tuple[str, str]  # (metric, slice)


class GateSettings(BaseModel):
    """Gate knobs, all inactive by default (report first, docs/decisions.md)."""

    model_config = ConfigDict(extra="forbid")

    fail_on_regression: bool = False
    max_drop: dict[str, float] = Field(default_factory=dict)  # metric[:slice] → absolute drop
    default_max_drop: float = 0.02
    floors: dict[str, float] = Field(default_factory=dict)  # metric[:slice] → absolute floor
    alpha: float = Field(default=0.05, gt=0, lt=1)
    require_significance: bool = True
    correction: Correction = "holm"  # over the p-values of the judged rows
    # a pooled set's unjudged cards decide the verdict (needs-labels): fail the job (exit 1) or only warn
    unjudged: Literal["fail", "warn"] = "fail"


def normalise_metric(name: str) -> str:
    text = name.strip()
    if text.lower() in PLAIN_METRICS:
        return text.lower()
    return parse_metric(text).name


def parse_key(key: str) -> RowKey:
    """``"hit@5"`` → ``("hit@5", "overall")``; ``"nDCG@10:locale=pt-BR"`` → ``("ndcg@10", "locale=pt-BR")``."""
    metric, sep, slice_name = key.partition(":")
    slice_name = slice_name.strip()
    if sep and not slice_name:
        raise UsageError(f"gate key {key!r}: empty slice name after ':'")
    return normalise_metric(metric), slice_name or OVERALL


def parse_assignment(text: str, *, flag: str) -> tuple[str, float]:
    """``"hit@5:locale=pt-BR=0.7"`` → ``("hit@5:locale=pt-BR", 0.7)`` (the value follows the last '=')."""
    key, sep, value = text.rpartition("=")
    if not sep or not key.strip():
        raise UsageError(f"{flag} {text!r}: expected METRIC=VALUE or METRIC:SLICE=VALUE, e.g. hit@5=0.8")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"{flag} {text[:80]!r}: {value[:40]!r} is not a number") from None
    if not math.isfinite(number):
        raise UsageError(f"{flag} {text[:80]!r}: the value must be a finite number")
    return key.strip(), number


@dataclass(frozen=True)
class GateRules:
    """GateSettings with parsed keys, checked against the metrics that exist."""

    fail_on_regression: bool
    default_max_drop: float
    max_drop: dict[RowKey, float]
    floors: dict[RowKey, float]
    alpha: float
    require_significance: bool
    headline: frozenset[RowKey]
    correction: str = "holm"

    def tolerance(self, key: RowKey) -> float:
        """``metric:slice`` key, else the bare ``metric`` key (any slice), else the default."""
        metric, _ = key
        if key in self.max_drop:
            return self.max_drop[key]
        return self.max_drop.get((metric, "*"), self.default_max_drop)

    def floor(self, key: RowKey) -> float | None:
        return self.floors.get(key)

    def gated(self, key: RowKey) -> bool:
        metric, slice_name = key
        named = key in self.max_drop or (slice_name == OVERALL and (metric, "*") in self.max_drop)
        return key in self.headline or named or key in self.floors


def gate_rules(*, gate: GateSettings, known_metrics: Iterable[str], headline_k: int,
               measured: Sequence[str]) -> GateRules:
    """Parse and check the knobs. A key naming a metric the results do not have → UsageError.
    ``measured``: the results' metrics in the grid's order, whose lead is the primary metric."""
    known = set(known_metrics)

    def check(kind: str, key: str) -> RowKey:
        parsed = parse_key(key)
        if parsed[0] not in known:
            raise UsageError(f"{kind} {key!r}: {parsed[0]} is not measured in these results "
                             f"(metrics: {', '.join(sorted(known))})")
        return parsed

    max_drop: dict[RowKey, float] = {}
    for key, value in gate.max_drop.items():
        if not 0 <= value < math.inf:
            raise UsageError(f"max drop {key!r}: {value} must be a finite number ≥ 0")
        metric, slice_name = check("max drop", key)
        bare = ":" not in key
        max_drop[(metric, "*") if bare else (metric, slice_name)] = float(value)
    floors: dict[RowKey, float] = {}
    for key, value in gate.floors.items():
        if not 0 <= value <= 1:
            raise UsageError(f"floor {key!r}: {value} must be between 0 and 1")
        floors[check("floor", key)] = float(value)
    if not 0 <= gate.default_max_drop < math.inf:
        raise UsageError(f"default max drop {gate.default_max_drop} must be a finite number ≥ 0")
    # the primary measure alone (hit@k at the headline k; the first headline measure measured; the
    # report's lead when none is)
    headline = frozenset((name, OVERALL) for name in lead_metrics(headline_k, measured)[:1])
    return GateRules(fail_on_regression=gate.fail_on_regression, default_max_drop=gate.default_max_drop,
                     max_drop=max_drop, floors=floors, alpha=gate.alpha,
                     require_significance=gate.require_significance, headline=headline,
                     correction=gate.correction)


def row_status(
    *, baseline: float | None, current: float | None, n: int, delta: float | None, p_value: float | None,
    tolerance: float, floor: float | None, alpha: float, require_significance: bool,
    mde: float | None = None, changed: bool = True,
) -> str:
    """The status of one metric × slice row (rules in the module docstring); ``p_value`` is the
    adjusted one for a judged row; ``mde``: ``math.inf`` when no drop is detectable at n, None
    when unknown (never underpowered); ``changed``: some paired case changed."""
    if current is not None and floor is not None and current < floor - _EPS:
        return "below_floor"
    if baseline is None:
        return "new"
    if current is None:
        return "missing"
    if n == 0 or delta is None:
        return "inconclusive"
    if not changed:
        return "unchanged"
    significant = p_value is not None and p_value < alpha
    if abs(delta) > tolerance + _EPS and (significant or not require_significance):
        return "regressed" if delta < 0 else "improved"
    if delta < 0 and not significant and mde is not None and mde > tolerance + _EPS:
        return "underpowered"
    if abs(delta) > tolerance + _EPS:
        return "inconclusive"
    return "ok"


@dataclass(frozen=True)
class RowView:
    """What the verdict needs to know about a row."""

    metric: str
    slice: str
    status: str
    current: float | None
    n: int
    n_current: int
    delta: float | None
    p_value: float | None
    tolerance: float
    floor: float | None
    n_lost: int | None = None
    n_gained: int | None = None


def failures(*, rules: GateRules, rows: Mapping[RowKey, RowView], display: Mapping[str, str]) -> list[str]:
    """One line per reason the gate fails: unmet floors (always), significant regressions of
    judged rows (only with ``fail_on_regression``)."""
    out: list[str] = []
    for key, floor in sorted(rules.floors.items()):
        row = rows.get(key)
        metric, slice_name = key
        name = display.get(metric, metric)
        if row is None or row.current is None:
            out.append(f"{name} on {slice_name}: no value in the results, so the floor {floor:g} is not met")
        elif row.status == "below_floor":
            out.append(f"{name} on {slice_name}: {row.current:.3f} is below the floor {floor:g} "
                       f"(n={row.n_current})")
    if rules.fail_on_regression:
        family_size = sum(1 for key, row in rows.items() if rules.gated(key) and row.p_value is not None)
        for key, row in rows.items():
            if row.status == "regressed" and rules.gated(key):
                assert row.delta is not None
                p = "significance not required"
                if rules.require_significance:
                    shown = format_p(row.p_value)
                    p = f"one-sided p < {shown[1:]}" if shown.startswith("<") else f"one-sided p = {shown}"
                    if rules.correction != "none" and family_size > 1:
                        p += f", {CORRECTION_NAMES[rules.correction]}-adjusted over {family_size} judged rows"
                moved = "" if row.n_lost is None else f"{row.n_lost} lost, {row.n_gained} gained of "
                out.append(f"{display.get(row.metric, row.metric)} on {row.slice}: dropped by {-row.delta:.3f} "
                           f"({moved}{row.n} paired; {p}), more than the max drop {row.tolerance:g}")
    return out


def format_p(p: float | None) -> str:
    """How every report and message writes a p-value: 3 decimals, ``<0.001`` below, ``–`` for none."""
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"
