"""The cells the reports show: one metric in one slice (current, baseline, Δ, n, status), grouped
into slice rows and lost / gained case rows, in display order. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.compare.model import BAD_STATUSES, CaseChange, Comparison, ComparisonRow
from retrieval_gate.metrics import parse_metric
from retrieval_gate.metrics.names import display_name, is_metric_name, lead_metrics
from retrieval_gate.render.slices import field_label, slice_order, split_slice
from retrieval_gate.score.results import Results
from retrieval_gate.score.scoring import NO_ANSWER_SLICE, OVERALL

INDICATIVE_N = 30  # slices with fewer paired (or scored) cases are marked "indicative"


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
    mde: float | None = None
    n_needed: int | None = None
    ci_level: float | None = None  # set only when the CI is not at the report's stated level
    ci_level_row: float | None = None  # the CI's level, always (a column at another level marks it)
    ci_agrees: bool | None = None  # False: the CI and the test disagree about 0 (the status reads the test)
    max_drop: float | None = None
    gated: bool = False
    # a bad row that counts for the title: judged, or significant over the reported rows' family
    flagged: bool = False

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
    possibly_relevant: str | None = None


def headline_metrics(results: Results) -> list[str]:
    """hit@k, recall@k, nDCG@k at the headline k, in that order (hit first: the success signal
    under disjunctive gold); the other measures at that k when none of the three was measured."""
    return lead_metrics(results.headline_k, results.metrics)


def cell_from_row(row: ComparisonRow, stated_level: float | None = None, alpha: float = 0.05) -> Cell:
    """``stated_level``: the level the report states for its CI columns (a CI at another level is
    marked); ``alpha``: the level at which a reported row's family-corrected p counts."""
    spec = parse_metric(row.metric)
    other_level = row.ci_level if row.ci_level is not None and stated_level is not None \
        and abs(row.ci_level - stated_level) > 1e-9 else None
    flagged = row.status in BAD_STATUSES and (
        row.gated or row.status == "below_floor" or row.p_family is None or row.p_family < alpha)
    return Cell(metric=row.metric, display=Markup(spec.display), measure=spec.measure, current=row.current,
                n=row.n, n_current=row.n_current, baseline=row.baseline, n_baseline=row.n_baseline,
                delta=row.delta, ci=row.ci, p_value=row.p_value, floor=row.floor, status=row.status,
                compared=True, mde=row.mde, n_needed=row.n_needed, ci_level=other_level, ci_level_row=row.ci_level,
                ci_agrees=row.ci_agrees, max_drop=row.max_drop, gated=row.gated, flagged=flagged)


def cells_by_slice(
    *, results: Results, comparison: Comparison | None, baseline: Baseline | None
) -> dict[str, dict[str, Cell]]:
    """``{slice: {metric: Cell}}`` for every metric: from the comparison's rows when there is one,
    else the results' aggregates (with the baseline's values, unpaired and without a delta, when
    a baseline came without a comparison)."""
    out: dict[str, dict[str, Cell]] = {}
    if comparison is not None:
        stated = comparison.stats.ci_level
        alpha = comparison.gate.alpha if comparison.stats.alpha is None else comparison.stats.alpha
        for row in comparison.rows:
            if is_metric_name(row.metric):
                out.setdefault(row.slice, {})[row.metric] = cell_from_row(row, stated, alpha)
        return out
    base_aggs = baseline.aggregates if baseline is not None else {}
    for slice_name, metrics in results.aggregates.items():
        for metric, cell in metrics.items():
            if not is_metric_name(metric):
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
    return Markup(display_name(metric)) if is_metric_name(metric) else metric


def slice_rows(cells: Mapping[str, Mapping[str, Cell]], primary: str) -> list[SliceRow]:
    """Every slice except ``overall`` and ``no-answer``, in display order, each with its own n
    (that of the primary metric, i.e. hit@k)."""
    rows = []
    for name, by_metric in cells.items():
        if name in (OVERALL, NO_ANSWER_SLICE) or not by_metric:
            continue
        field_name, value = split_slice(name)
        lead = by_metric.get(primary) or next(iter(by_metric.values()))
        rows.append(SliceRow(name=name, field=field_name, label=field_label(field_name), value=value,
                             n=lead.n, n_current=lead.n_current, cells=dict(by_metric),
                             order=slice_order(field_name, value=value)))
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
                    delta=c.delta, slices=[s for s in c.slices if s != OVERALL],
                    possibly_relevant=c.possibly_relevant) for c in changes]


def worse_cells(cells: Mapping[str, Mapping[str, Cell]], headline_names: Sequence[str]) -> list[tuple[str, Cell]]:
    """Every (slice, cell) that got worse in the corrected sense (``Cell.flagged``: a judged row
    regressed or below its floor, or a reported row regressed with its p Holm-corrected over the
    reported rows below alpha): headline metrics first, then overall before slices, then the
    largest drop."""
    found = [(name, cell) for name, by_metric in cells.items() for cell in by_metric.values() if cell.flagged]

    def key(item: tuple[str, Cell]) -> tuple[int, int, float, str, str]:
        name, cell = item
        return (0 if cell.metric in headline_names else 1, 0 if name == OVERALL else 1,
                cell.delta if cell.delta is not None else 0.0, name, cell.metric)

    return sorted(found, key=key)
