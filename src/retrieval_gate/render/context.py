"""The view model shared by the Markdown and HTML templates: results (+ comparison, + baseline)
→ plain, template-ready data. Pure functions; no formatting for a particular output here except
numbers (see ``render/fmt.py``).

What the templates receive is documented in docs/reports.md ("Custom templates").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from retrieval_gate.compare.model import Baseline, CaseChange, Comparison, ComparisonRow
from retrieval_gate.errors import UsageError
from retrieval_gate.metrics import parse_metric
from retrieval_gate.render.escape import clean_text
from retrieval_gate.score.results import Results

INDICATIVE_N = 30  # slices with fewer paired (or scored) cases are marked "indicative"
WORSE_SHOWN = 5  # regressed rows named right under the verdict
HEADLINE_MEASURES = ("hit", "recall", "ndcg")
SLICE_FIELD_ORDER = ("kind", "locale", "form", "hard_class")
NO_ANSWER = "no-answer"
BAD_STATUSES = frozenset({"regressed", "below_floor"})
RECALL_CAVEAT = (
    "recall@{k} is a lower bound: gold is disjunctive (any listed card answers the case), so a case "
    "that retrieves 1 of its 2 acceptable cards scores 0.5 although it is answered. "
    "hit@{k} is the success signal."
)


@dataclass(frozen=True)
class Cell:
    """One metric in one slice. Without a comparison only ``current`` / ``n_current`` are set and
    ``status`` is ``"current"``. ``n`` is the paired n (cases scored in both runs) when compared,
    else the current n."""

    metric: str
    display: str
    measure: str
    current: float | None
    n: int
    n_current: int
    baseline: float | None = None
    n_baseline: int = 0
    delta: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    floor: float | None = None
    status: str = "current"
    compared: bool = False

    @property
    def bad(self) -> bool:
        return self.status in BAD_STATUSES


@dataclass(frozen=True)
class SliceRow:
    name: str  # as in the results file: "locale=pt-BR"
    field: str  # "locale", "tag.team", "hard_class"
    label: str  # "hard class", "tag team"
    value: str
    n: int
    n_current: int
    cells: dict[str, Cell]
    order: tuple[Any, ...] = ()

    @property
    def indicative(self) -> bool:
        return self.n < INDICATIVE_N

    @property
    def bad(self) -> bool:
        return any(c.bad for c in self.cells.values())


@dataclass(frozen=True)
class CaseRow:
    """One lost / gained case."""

    id: str
    query: str
    metric: str
    display: str
    baseline: float
    current: float
    delta: float
    slices: list[str]


@dataclass(frozen=True)
class TrendPoint:
    label: str
    value: float
    current: bool = False


@dataclass(frozen=True)
class Trend:
    metric: str
    display: str
    points: list[TrendPoint]

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


@dataclass(frozen=True)
class Cut:
    """What a size-limited comment left out: ``(what, shown, total)`` per list."""

    parts: list[tuple[str, int, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.parts)


@dataclass(frozen=True)
class Limits:
    """How many per-case entries (each list) and slice rows a comment may show; None = all."""

    cases: int | None = None
    slices: int | None = None


@dataclass(frozen=True)
class Link:
    label: str
    url: str


LINK_LABELS = {"report": "HTML report", "artifact": "HTML report (artifact)", "run": "workflow run",
               "summary": "job summary", "baseline": "baseline file"}


def headline_metrics(results: Results) -> list[str]:
    """hit@k, recall@k, nDCG@k at the headline k, in that order (hit first: the success signal
    under disjunctive gold); the other measures at that k when none of the three was measured."""
    k = results.headline_k
    names = [f"{m}@{k}" for m in HEADLINE_MEASURES if f"{m}@{k}" in results.metrics]
    return names or [m for m in results.metrics if parse_metric(m).k == k] or list(results.metrics[:3])


def primary_metric(results: Results) -> str:
    return headline_metrics(results)[0]


def cell_from_row(row: ComparisonRow) -> Cell:
    spec = parse_metric(row.metric)
    return Cell(metric=row.metric, display=Markup(spec.display), measure=spec.measure, current=row.current,
                n=row.n, n_current=row.n_current, baseline=row.baseline, n_baseline=row.n_baseline,
                delta=row.delta, ci=row.ci, p_value=row.p_value, floor=row.floor, status=row.status,
                compared=True)


def cells_by_slice(
    *, results: Results, comparison: Comparison | None, baseline: Baseline | None
) -> dict[str, dict[str, Cell]]:
    """``{slice: {metric: Cell}}`` for every metric: from the comparison's rows when there is one,
    else the results' aggregates (with the baseline's values, unpaired and without a delta, when
    a baseline came without a comparison)."""
    out: dict[str, dict[str, Cell]] = {}
    if comparison is not None:
        for row in comparison.rows:
            if _is_metric(row.metric):
                out.setdefault(row.slice, {})[row.metric] = cell_from_row(row)
        return out
    base_aggs = baseline.aggregates if baseline is not None else {}
    for slice_name, metrics in results.aggregates.items():
        for metric, cell in metrics.items():
            if not _is_metric(metric):
                continue
            spec = parse_metric(metric)
            old = base_aggs.get(slice_name, {}).get(metric)
            out.setdefault(slice_name, {})[metric] = Cell(
                metric=metric, display=Markup(spec.display), measure=spec.measure, current=cell.value,
                n=cell.n, n_current=cell.n, baseline=None if old is None else old.value,
                n_baseline=0 if old is None else old.n)
    return out


def _display(metric: str) -> str:
    """``ndcg@5`` → ``nDCG@5`` (marked safe); anything else unchanged (escaped when shown)."""
    return Markup(parse_metric(metric).display) if _is_metric(metric) else metric


def _is_metric(name: str) -> bool:
    try:
        parse_metric(name)
    except UsageError:
        return False
    return "@" in name


def split_slice(name: str) -> tuple[str, str]:
    """``"locale=pt-BR"`` → ``("locale", "pt-BR")``; ``"no-answer"`` → ``("no-answer", "")``."""
    field_name, sep, value = name.partition("=")
    return (field_name, value) if sep else (name, "")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """``"l10"`` sorts after ``"l2"``: digit runs compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.lower())
                 for part in re.findall(r"\d+|\D+", text))


def slice_order(field_name: str, value: str) -> tuple[Any, ...]:
    """kind, locale, form, hard class, then tags, then anything else; values in natural order."""
    if field_name in SLICE_FIELD_ORDER:
        return (SLICE_FIELD_ORDER.index(field_name), "", natural_key(value))
    if field_name.startswith("tag."):
        return (len(SLICE_FIELD_ORDER), field_name, natural_key(value))
    return (len(SLICE_FIELD_ORDER) + 1, field_name, natural_key(value))


def field_label(field_name: str) -> str:
    if field_name.startswith("tag."):
        return "tag " + field_name[4:]
    return field_name.replace("_", " ")


def slice_rows(cells: Mapping[str, Mapping[str, Cell]], primary: str) -> list[SliceRow]:
    """Every slice except ``overall`` and ``no-answer``, in display order, each with its own n
    (that of the primary metric, i.e. hit@k)."""
    rows = []
    for name, by_metric in cells.items():
        if name in ("overall", NO_ANSWER) or not by_metric:
            continue
        field_name, value = split_slice(name)
        lead = by_metric.get(primary) or next(iter(by_metric.values()))
        rows.append(SliceRow(name=name, field=field_name, label=field_label(field_name), value=value,
                             n=lead.n, n_current=lead.n_current, cells=dict(by_metric),
                             order=slice_order(field_name, value)))
    return sorted(rows, key=lambda r: r.order)


def slice_priority(row: SliceRow, primary: str) -> tuple[int, float, int]:
    """Which slices a size-limited comment keeps: regressed / below floor first, then improved,
    then the largest |Δ| of the primary metric, then the largest n."""
    lead = row.cells.get(primary)
    rank = 0 if row.bad else (1 if any(c.status == "improved" for c in row.cells.values()) else 2)
    delta = abs(lead.delta) if lead is not None and lead.delta is not None else 0.0
    return (rank, -delta, -row.n)


def keep_slices(rows: list[SliceRow], limit: int | None, primary: str) -> list[SliceRow]:
    if limit is None or len(rows) <= limit:
        return rows
    keep = {r.name for r in sorted(rows, key=lambda r: slice_priority(r, primary))[:limit]}
    return [r for r in rows if r.name in keep]


def case_rows(changes: Sequence[CaseChange]) -> list[CaseRow]:
    return [CaseRow(id=c.id, query=c.query, metric=c.metric, display=_display(c.metric), baseline=c.baseline,
                    current=c.current,
                    delta=c.delta, slices=[s for s in c.slices if s != "overall"]) for c in changes]


def trend(*, results: Results, baseline: Baseline | None, metric: str) -> Trend | None:
    """The headline metric over the baseline history (oldest first), then this run. None when
    there is nothing to draw a line through (fewer than two points)."""
    points: list[TrendPoint] = []
    if baseline is not None:
        for i, entry in enumerate(baseline.history):
            if metric in entry.headline:
                label = entry.sha[:7] if entry.sha else (entry.ref or (entry.timestamp or "")[:10] or f"#{i + 1}")
                points.append(TrendPoint(label=label, value=entry.headline[metric]))
        if not points and metric in baseline.aggregates.get("overall", {}):
            label = baseline.sha[:7] if baseline.sha else "baseline"
            points.append(TrendPoint(label=label, value=baseline.aggregates["overall"][metric].value))
    current = results.aggregates.get("overall", {}).get(metric)
    if current is not None:
        points.append(TrendPoint(label="this run", value=current.value, current=True))
    if len(points) < 2:
        return None
    return Trend(metric=metric, display=Markup(parse_metric(metric).display), points=points)


def verdict(*, comparison: Comparison | None, baseline: Baseline | None, headline: Sequence[Cell],
            worse: Sequence[tuple[str, Cell]] = ()) -> dict[str, str]:
    """``kind``: first_run, not_compared, fail (the gate failed), regressed (a headline metric
    overall), mixed (something else got worse), improved (a headline metric overall, nothing
    worse), unchanged."""
    if comparison is None:
        if baseline is None:
            return {"kind": "first_run", "emoji": "🆕", "title": "first run, no baseline yet"}
        return {"kind": "not_compared", "emoji": "ℹ️", "title": "not compared with the baseline"}
    if comparison.verdict == "fail":
        return {"kind": "fail", "emoji": "❌", "title": "gate failed"}
    improved = any(c.status == "improved" for c in headline)
    if any(c.bad for c in headline):
        return {"kind": "regressed", "emoji": "🔴", "title": "regressed"}
    if worse or comparison.regressed:
        title = "better overall, worse in places" if improved else "worse in places"
        return {"kind": "mixed", "emoji": "🟠", "title": title}
    if improved:
        return {"kind": "improved", "emoji": "🟢", "title": "improved"}
    return {"kind": "unchanged", "emoji": "⚪", "title": "no significant change"}


def worse_cells(cells: Mapping[str, Mapping[str, Cell]], headline_names: Sequence[str]) -> list[tuple[str, Cell]]:
    """Every (slice, cell) that regressed or fell below its floor: headline metrics first, then
    overall before slices, then the largest drop."""
    found = [(name, cell) for name, by_metric in cells.items() for cell in by_metric.values() if cell.bad]

    def key(item: tuple[str, Cell]) -> tuple[int, int, float, str, str]:
        name, cell = item
        return (0 if cell.metric in headline_names else 1, 0 if name == "overall" else 1,
                cell.delta if cell.delta is not None else 0.0, name, cell.metric)

    return sorted(found, key=key)


def gate_active(gate: Mapping[str, Any]) -> bool:
    return bool(gate.get("fail_on_regression") or gate.get("max_drop") or gate.get("floors"))


def gate_summary(gate: Mapping[str, Any]) -> str:
    """One line describing the gate knobs in force ("off (report only)" when none is on)."""
    parts = []
    if gate.get("fail_on_regression"):
        text = "fail on regression"
        if gate.get("default_max_drop") is not None:
            text += f" (max drop {gate['default_max_drop']:g}"
            text += ", significant drops only)" if gate.get("require_significance", True) else ")"
        parts.append(text)
    if gate.get("max_drop"):
        parts.append("max drop " + ", ".join(f"{k} {v:g}" for k, v in sorted(gate["max_drop"].items())))
    if gate.get("floors"):
        parts.append("floors " + ", ".join(f"{k} ≥ {v:g}" for k, v in sorted(gate["floors"].items())))
    return "; ".join(parts) if parts else "off (report only)"


def stats_line(stats: Mapping[str, Any]) -> str:
    """``paired percentile bootstrap, 10,000 resamples, seed 0`` from a comparison's stats."""
    method = stats.get("ci") or stats.get("method")
    if not method:
        return ""
    parts = [str(method)]
    if stats.get("resamples"):
        parts.append(f"{int(stats['resamples']):,} resamples")
    if stats.get("seed") is not None:
        parts.append(f"seed {stats['seed']}")
    return ", ".join(parts)


def value_text(value: Any, *, max_len: int = 80) -> str:
    """A config value as short plain text: JSON for containers, ``str`` otherwise."""
    if value is None:
        return "(none)"
    if isinstance(value, dict | list | tuple):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return clean_text(text, max_len=max_len)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` → ``{"a.b": 1}`` (lists kept whole)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, prefix=f"{name}."))
        else:
            out[name] = value
    return out


def _limit(items: Sequence[Any], limit: int | None, what: str, cut: list[tuple[str, int, int]]) -> list[Any]:
    if limit is None or len(items) <= limit:
        return list(items)
    cut.append((what, limit, len(items)))
    return list(items[:limit])


def build_context(
    *,
    results: Results,
    comparison: Comparison | None = None,
    baseline: Baseline | None = None,
    links: Mapping[str, str] | None = None,
    limits: Limits = Limits(),
    marker: str = "",
) -> dict[str, Any]:
    """Everything the templates show, as plain data. ``limits`` trims the per-case lists and the
    slice rows (what was cut is listed in ``cut``)."""
    k = results.headline_k
    names = headline_metrics(results)
    primary = names[0]
    cells = cells_by_slice(results=results, comparison=comparison, baseline=baseline)
    overall = cells.get("overall", {})
    headline = [overall[m] for m in names if m in overall]
    worse = worse_cells(cells, names)
    cut: list[tuple[str, int, int]] = []

    rows = slice_rows(cells, primary)
    shown_rows = keep_slices(rows, limits.slices, primary)
    if len(shown_rows) < len(rows):
        cut.append(("slices", len(shown_rows), len(rows)))

    lost = case_rows(comparison.lost_hits) if comparison else []
    gained = case_rows(comparison.gained_hits) if comparison else []
    added = list(comparison.cases_added) if comparison else []
    removed = list(comparison.cases_removed) if comparison else []
    failed_ids = list(results.completeness.failed_ids)

    stats = dict(comparison.stats) if comparison else {}
    alpha = stats.get("alpha", (comparison.gate.get("alpha") if comparison else None) or 0.05)
    level = stats.get("ci_level", 1 - float(alpha))
    no_answer_cells = results.aggregates.get(NO_ANSWER, {})
    other = [m for m in results.metrics if m not in names and m in overall]

    context: dict[str, Any] = {
        "marker": marker,
        "suite": results.suite,
        "tool_version": results.tool_version,
        "headline_k": k,
        "ks": list(results.k),
        "primary": primary,
        "primary_display": Markup(parse_metric(primary).display),
        "compared": comparison is not None,
        "has_baseline": comparison is not None or baseline is not None,
        "verdict": verdict(comparison=comparison, baseline=baseline, headline=headline, worse=worse),
        "worse": [{"slice": name, "field": field_label(split_slice(name)[0]), "value": split_slice(name)[1],
                   "cell": cell}
                  for name, cell in worse[:WORSE_SHOWN]],
        "n_worse": len(worse),
        "failures": list(comparison.failures) if comparison else [],
        "headline": headline,
        "caveat": RECALL_CAVEAT.format(k=k) if any(c.measure == "recall" for c in headline) else "",
        "confidence": round(100 * float(level)),
        "slices": shown_rows,
        "slices_total": len(rows),
        "slice_metrics": [(m, Markup(parse_metric(m).display)) for m in names],
        "any_indicative": any(r.indicative for r in shown_rows),
        "no_answer": {"n": results.completeness.no_gold,
                      "abstention": no_answer_cells.get("abstention")},
        "other_metrics": [overall[m] for m in other],
        "completeness": results.completeness,
        "failed_ids": _limit(failed_ids, limits.cases, "failed case ids", cut),
        "like_for_like": comparison.like_for_like if comparison else True,
        "config_changes": [
            {"key": c.key, "baseline": value_text(c.baseline), "current": value_text(c.current)}
            for c in (comparison.config_changes if comparison else [])
        ],
        "cases_added": _limit(added, limits.cases, "added case ids", cut),
        "cases_removed": _limit(removed, limits.cases, "removed case ids", cut),
        "n_added": len(added),
        "n_removed": len(removed),
        "n_paired": comparison.n_paired if comparison else 0,
        "lost_hits": _limit(lost, limits.cases, "lost hits", cut),
        "gained_hits": _limit(gained, limits.cases, "gained hits", cut),
        "n_lost": len(lost),
        "n_gained": len(gained),
        "trend": trend(results=results, baseline=baseline, metric=primary),
        "gate": gate_summary(comparison.gate) if comparison else "",
        "gate_on": bool(comparison and gate_active(comparison.gate)),
        "stats": stats,
        "stats_line": stats_line(stats),
        "baseline_sha": (comparison.baseline_sha if comparison else None) or (baseline.sha if baseline else None),
        "baseline_ref": (comparison.baseline_ref if comparison else None) or (baseline.ref if baseline else None),
        "baseline_updated_at": (comparison.baseline_updated_at if comparison else None)
        or (baseline.updated_at if baseline else None),
        "links": [Link(label=LINK_LABELS.get(key, key), url=url) for key, url in (links or {}).items()],
        "latency": results.latency,
        "config": flatten(results.config),
        "inputs": results.inputs,
        "fingerprint": flatten(baseline.fingerprint) if baseline else {},
        "created_at": results.created_at,
        "results": results,
        "comparison": comparison,
        "baseline": baseline,
    }
    context["cut"] = Cut(parts=cut)
    return context
