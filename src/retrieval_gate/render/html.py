"""The HTML report: one self-contained file (inline CSS, inline SVG charts, a few lines of inline
JS to sort and filter the per-case table), rendered from ``templates/report.html.j2`` in a
sandboxed, HTML-autoescaping Jinja environment. No remote URL of any kind, and a
Content-Security-Policy that forbids loading anything."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2 import PackageLoader, StrictUndefined, select_autoescape
from jinja2.sandbox import ImmutableSandboxedEnvironment

from retrieval_gate.audit.model import AuditReport
from retrieval_gate.baseline.model import Baseline
from retrieval_gate.compare.changes_model import CAUSES
from retrieval_gate.compare.label_queue import QueueItem
from retrieval_gate.compare.model import Comparison
from retrieval_gate.metrics import parse_metric
from retrieval_gate.render import fmt
from retrieval_gate.render.cells import Cell, SliceRow
from retrieval_gate.render.changes import CAUSE_WORDS
from retrieval_gate.render.charts import ChartRow, slice_chart, trend_chart
from retrieval_gate.render.context import build_context
from retrieval_gate.render.drilldown import drilldown
from retrieval_gate.render.escape import no_bidi
from retrieval_gate.render.slices import field_label, split_slice
from retrieval_gate.score.results import CaseResult, Results
from retrieval_gate.score.scoring import OVERALL

HTML_TEMPLATE = "report.html.j2"
TOP_RETRIEVED = 5
CHART_MEASURES = ("hit", "ndcg")  # the success signal and the ranking signal; recall is in the table


@dataclass(frozen=True)
class CaseLine:
    """One row of the per-case table. ``deltas`` are per-case (current − baseline) for the
    headline metrics, when the baseline has the case."""

    id: str
    query: str
    status: str
    error: str | None
    slices: list[str]
    values: dict[str, float | None]
    deltas: dict[str, float | None]
    gold: list[str]
    retrieved: list[str]
    hit_ranks: list[int]  # 1-based ranks of gold cards among the retrieved
    ranking: list[str] = field(default_factory=list)  # the whole stored ranking (the expanded row)
    cause: str = ""  # the cause of "what changed" ("" when the case did not change)
    movement: str = ""


def case_lines(results: Results, baseline: Baseline | None, metrics: list[str],
               comparison: Comparison | None = None) -> list[CaseLine]:
    base = baseline.cases if baseline is not None else {}
    changed = {c.id: c for c in comparison.changed_cases} if comparison is not None else {}
    out = []
    for case in results.cases:
        old = base.get(case.id)
        values = {m: case.scores.get(m) for m in metrics}
        deltas: dict[str, float | None] = {}
        for m in metrics:
            before = old.scores.get(m) if old is not None else None
            now = case.scores.get(m)
            deltas[m] = None if before is None or now is None else now - before
        out.append(CaseLine(
            id=case.id, query=case.query, status=case.status, error=case.error,
            slices=[s for s in case.slices if s != OVERALL], values=values, deltas=deltas,
            gold=list(case.gold), retrieved=list(case.retrieved[:TOP_RETRIEVED]),
            hit_ranks=_hit_ranks(case), ranking=list(case.retrieved),
            cause=changed[case.id].cause if case.id in changed else "",
            movement=changed[case.id].movement if case.id in changed else "",
        ))
    return out


def _hit_ranks(case: CaseResult) -> list[int]:
    gold = set(case.gold)
    return [i + 1 for i, card in enumerate(case.retrieved) if card in gold]


def chart_rows(overall: Cell | None, rows: list[SliceRow], metric: str) -> list[ChartRow]:
    out = [ChartRow(label=OVERALL, cell=overall)] if overall is not None else []
    for row in rows:
        if metric in row.cells:
            out.append(ChartRow(label=f"{row.label} = {row.value}", cell=row.cells[metric],
                                indicative=row.indicative))
    return out


def html_environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        loader=PackageLoader("retrieval_gate.render", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=fmt.num, signed=fmt.signed, delta=fmt.delta_plain, ci=fmt.ci, n=fmt.n_label,
                       mde=fmt.mde_text, count=fmt.count, change=fmt.change, field_label=field_label,
                       url=lambda value: fmt.safe_url(str(value)) or "#")
    env.globals.update(status_words=fmt.STATUS_WORDS, split_slice=split_slice)
    return env


def render_html(*, results: Results, comparison: Comparison | None = None, baseline: Baseline | None = None,
                audit: AuditReport | None = None, queue: Sequence[QueueItem] | None = None,
                top_up: Mapping[str, Any] | None = None) -> str:
    """The full report as one HTML document (a string); with ``audit``, its coverage matrix too;
    with ``queue`` (``compare.label_queue``), the cards to label under their cases in "What changed"."""
    context: dict[str, Any] = build_context(results=results, comparison=comparison, baseline=baseline, top_up=top_up)
    if audit is not None and audit.coverage is not None:
        from retrieval_gate.render.audit import coverage_grid

        context["coverage_grid"] = coverage_grid(audit.coverage)
        context["coverage"] = audit.coverage
    primary = context["primary"]
    overall = {c.metric: c for c in context["headline"]}
    compared = comparison is not None
    context["charts"] = [
        slice_chart(chart_rows(overall.get(metric), context["slices"], metric),
                    title=f"{display} by slice", proportion=metric.startswith("hit@"), compared=compared)
        for metric, display in context["slice_metrics"] if parse_metric(metric).measure in CHART_MEASURES
    ] or [
        slice_chart(chart_rows(overall.get(metric), context["slices"], metric), title=f"{display} by slice",
                    proportion=False, compared=compared)
        for metric, display in context["slice_metrics"][:1]
    ]
    context["trend_svg"] = trend_chart(context["trend"]) if context["trend"] is not None else None
    metrics = [c.metric for c in context["headline"]] or [primary]
    context["case_metrics"] = [(m, c.display) for m, c in overall.items()]
    context["cases"] = case_lines(results, baseline, metrics, comparison)
    context["case_statuses"] = sorted({c.status for c in context["cases"]})
    context["case_causes"] = [c for c in CAUSES if any(line.cause == c for line in context["cases"])]
    context["case_slices"] = sorted({s for line in context["cases"] for s in line.slices})
    context["lost_cases"] = [{"id": c.id, "query": c.query, "cause": CAUSE_WORDS[c.cause],
                              "gold": [g.card for g in c.gold]}
                             for c in (comparison.changed_cases if comparison else []) if c.movement == "lost-hit"]
    by_case: dict[str, list[QueueItem]] = {}
    for item in queue or ():
        by_case.setdefault(item.case, []).append(item)
    context["queue"] = by_case
    context["queue_n"] = sum(len(items) for items in by_case.values())
    context["max_grade"] = max((g for c in results.cases for g in c.grades.values()), default=1)
    context["case_has_deltas"] = baseline is not None
    context["top_retrieved"] = TOP_RETRIEVED
    context["drill"] = drilldown(comparison=comparison, results=results, baseline=baseline)
    # Bidi overrides in a card id or a query would reorder what the reader sees: written visibly.
    return no_bidi(html_environment().get_template(HTML_TEMPLATE).render(**context))
