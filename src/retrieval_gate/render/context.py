"""The view model shared by the Markdown and HTML templates: results (+ comparison, + baseline)
→ plain, template-ready data. Pure functions; no formatting for a particular output here except
numbers (see ``render/fmt.py``).

What the templates receive is documented in docs/reports.md ("Custom templates").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from retrieval_gate.baseline.fingerprint import flatten, settings_changes
from retrieval_gate.baseline.model import Baseline
from retrieval_gate.compare.model import Comparison, ComparisonStats
from retrieval_gate.metrics import parse_metric
from retrieval_gate.render.cells import (
    INDICATIVE_N,
    case_rows,
    cells_by_slice,
    headline_metrics,
    keep_slices,
    slice_rows,
    worse_cells,
)
from retrieval_gate.render.changes import changes_context, lost_clause, with_kb_cards
from retrieval_gate.render.escape import clean_text
from retrieval_gate.render.failed_cases import failures
from retrieval_gate.render.fmt import level as level_text
from retrieval_gate.render.slices import field_label, split_slice
from retrieval_gate.render.trend import trend
from retrieval_gate.render.verdict import (
    DECISIVE_TOP_UP_COMMAND,
    TOP_UP_COMMAND,
    correction_text,
    gate_active,
    gate_summary,
    power_summary,
    stats_line,
    unjudged_note,
    verdict,
)
from retrieval_gate.score.results import Results
from retrieval_gate.score.scoring import NO_ANSWER_SLICE, OVERALL

WORSE_SHOWN = 5  # regressed rows named right under the verdict
RECALL_CAVEAT = (
    "recall@{k} is a lower bound: gold is disjunctive (any listed card answers the case), so a case "
    "that retrieves 1 of its 2 acceptable cards scores 0.5 although it is answered. "
    "hit@{k} is the success signal."
)


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


# The labels of the links' keys (``report --link KEY=URL``); a key not here is its own label (the
# action keys the run's link by the forge's own words, ``Words.run_link``: "workflow run", "pipeline").
LINK_LABELS = {"report": "HTML report", "artifact": "HTML report (artifact)", "run": "workflow run",
               "summary": "job summary", "baseline": "baseline file"}


def value_text(value: Any, *, max_len: int = 80) -> str:
    """A config value as short plain text: JSON for containers, ``str`` otherwise."""
    if value is None:
        return "(none)"
    if isinstance(value, dict | list | tuple):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return clean_text(text, max_len=max_len)


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
    top_up: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the templates show, as plain data. ``limits`` trims the per-case lists and the
    slice rows (what was cut is listed in ``cut``, in the order the comment shows them)."""
    names = headline_metrics(results)
    cells = cells_by_slice(results=results, comparison=comparison, baseline=baseline)
    cut: list[tuple[str, int, int]] = []
    rows = slice_rows(cells, primary=names[0])
    shown_rows = keep_slices(rows, limit=limits.slices, primary=names[0])
    if len(shown_rows) < len(rows):
        cut.append(("slices", len(shown_rows), len(rows)))
    context: dict[str, Any] = {
        "marker": marker,
        "suite": results.suite,
        "tool_version": results.tool_version,
        "headline_k": results.headline_k,
        "ks": list(results.k),
        "primary": names[0],
        "primary_display": Markup(parse_metric(names[0]).display),
        "compared": comparison is not None,
        "has_baseline": comparison is not None or baseline is not None,
        **_headline_part(results=results, comparison=comparison, baseline=baseline, cells=cells, names=names),
        **_confidence_part(comparison=comparison, cells=cells, rows=rows, primary=names[0]),
        "slices": shown_rows,
        "slices_total": len(rows),
        "slice_metrics": [(m, Markup(parse_metric(m).display)) for m in names],
        # the same rule marks the overall rows and the slices: fewer than INDICATIVE_N cases
        "indicative_n": INDICATIVE_N,
        "any_indicative": any(r.indicative for r in shown_rows)
        or any(c.n < INDICATIVE_N for m, c in cells.get(OVERALL, {}).items() if m in names),
        **_judgement_part(results=results, comparison=comparison),
        **_cases_part(results=results, comparison=comparison, limits=limits, cut=cut),
        **_baseline_part(results=results, comparison=comparison, baseline=baseline, primary=names[0]),
        "links": [Link(label=LINK_LABELS.get(key, key), url=url) for key, url in (links or {}).items()],
        "latency": results.latency,
        "config": flatten(results.config),
        "inputs": results.inputs,
        "created_at": results.created_at,
        "results": results,
        "comparison": comparison,
        "baseline": baseline,
    }
    context.update(what_changed=changes_context(comparison, limit=limits.cases, cut=cut),
                   lost_clause=lost_clause(comparison),
                   config_changes=with_kb_cards(context["config_changes"], comparison=comparison))
    context["cut"] = Cut(parts=cut)
    # the PR run's `label top-up` (publish.reports.write_top_up): {cards, cases, k, path, draft, url}; the
    # labelling link of the report and the comment, and what a `needs-labels` title counts
    context["top_up"] = dict(top_up) if top_up else None
    context["labelling_link"] = _labelling_link(top_up)
    return context


def _headline_part(*, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                   cells: Mapping[str, Mapping[str, Any]], names: list[str]) -> dict[str, Any]:
    """The verdict and the headline rows: what got worse, the gate's failures, the other measures."""
    overall = cells.get(OVERALL, {})
    headline = [overall[m] for m in names if m in overall]
    worse = worse_cells(cells, headline_names=names)
    other = [m for m in results.metrics if m not in names and m in overall]
    return {
        "verdict": verdict(comparison=comparison, baseline=baseline, headline=headline, worse=worse),
        "worse": [{"slice": name, "field": field_label(split_slice(name)[0]), "value": split_slice(name)[1],
                   "cell": cell}
                  for name, cell in worse[:WORSE_SHOWN]],
        "n_worse": len(worse),
        "failures": list(comparison.failures) if comparison else [],
        "headline": headline,
        # the n of the row the title judges (its paired test's n: the cases with gold), as the title says
        "n_primary": headline[0].n if headline else (comparison.n_paired if comparison else 0),
        "caveat": RECALL_CAVEAT.format(k=results.headline_k) if any(c.measure == "recall" for c in headline) else "",
        "other_metrics": [overall[m] for m in other],
    }


def _confidence_part(*, comparison: Comparison | None, cells: Mapping[str, Mapping[str, Any]], rows: Sequence[Any],
                     primary: str) -> dict[str, Any]:
    """The intervals' levels, the power to see a drop, the statistics' one line."""
    stats = comparison.stats if comparison else ComparisonStats()
    alpha = stats.alpha if stats.alpha is not None else comparison.gate.alpha if comparison else 0.05
    level = stats.ci_level if stats.ci_level is not None else 1 - alpha
    level_judged = stats.ci_level_judged if stats.ci_level_judged is not None else level
    power = power_summary(overall=cells.get(OVERALL, {}).get(primary), slices=[
        (f"{row.label} = {row.value}", row.cells[primary]) for row in rows if primary in row.cells], stats=stats)
    return {
        "confidence": round(100 * float(level)),
        "level": float(level),
        # the headline table holds the judged rows, at their own (Bonferroni) level
        "level_judged": level_judged,
        "confidence_judged": level_text(level_judged),
        "any_disagree": any(c.ci_agrees is False for by_metric in cells.values() for c in by_metric.values()),
        "power": power,
        "enough": power["enough"] if power else None,
        "correction": correction_text(stats),
        "stats": stats.model_dump(mode="json"),
        "stats_line": stats_line(stats),
    }


def _judgement_part(*, results: Results, comparison: Comparison | None) -> dict[str, Any]:
    """What the golden set judges: the no-answer cases, the unjudged share, the condensed reading."""
    k = results.headline_k
    no_answer_cells = results.aggregates.get(NO_ANSWER_SLICE, {})
    return {
        "no_answer": {"n": results.completeness.no_gold,
                      "abstention": no_answer_cells.get("abstention")},
        # shown for sets that judge more than their gold (graded gold, grade-0 entries, the sidecar)
        "unjudged": results.unjudged.get(OVERALL, {}).get(f"unjudged@{k}")
        if any(case.grades or case.not_relevant for case in results.cases) else None,
        # needs-labels: labelling_link (the PR run's top-up folder) labels exactly the PR's
        # unjudged top k; without one, the command that builds it
        "top_up_command": Markup(TOP_UP_COMMAND),  # a constant: no PR text in it
        "decisive_top_up_command": Markup(DECISIVE_TOP_UP_COMMAND),
        "unjudged_note": unjudged_note(comparison),
        "condensed": comparison.condensed if comparison else None,
    }


def _cases_part(*, results: Results, comparison: Comparison | None, limits: Limits,
                cut: list[tuple[str, int, int]]) -> dict[str, Any]:
    """The cases: failed, added, removed, lost and gained hits (each list cut to ``limits.cases``, in
    this order), and the settings that changed beside them."""
    failed_ids = list(results.completeness.failed_ids)
    added = list(comparison.cases_added) if comparison else []
    removed = list(comparison.cases_removed) if comparison else []
    lost = case_rows(comparison.lost_hits) if comparison else []
    gained = case_rows(comparison.gained_hits) if comparison else []
    return {
        "completeness": results.completeness,
        "failed_ids": _limit(failed_ids, limits.cases, "failed case ids", cut),
        "failed_reasons": failures(results),  # why they failed: a few reasons, one line each (render.failed_cases)
        "like_for_like": comparison.like_for_like if comparison else True,
        "config_changes": [
            {"key": c.key, "baseline": value_text(c.baseline), "current": value_text(c.current)}
            for c in (comparison.config_changes if comparison else [])
        ],
        # what makes the comparison not like-for-like: settings and the case set, never a KB edit
        "settings_changes": [c.key for c in settings_changes(comparison.config_changes)] if comparison else [],
        "cases_added": _limit(added, limits.cases, "added case ids", cut),
        "cases_removed": _limit(removed, limits.cases, "removed case ids", cut),
        "n_added": len(added),
        "n_removed": len(removed),
        "n_paired": comparison.n_paired if comparison else 0,
        "lost_hits": lost,  # shown as part of what_changed (render.changes), which is cut there
        "gained_hits": gained,
        "n_lost": len(lost),
        "n_gained": len(gained),
    }


def _baseline_part(*, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                   primary: str) -> dict[str, Any]:
    """The baseline judged against: its commit, the trend of its history, the gate's settings."""
    return {
        "trend": trend(results=results, baseline=baseline, metric=primary),
        "gate": gate_summary(comparison.gate) if comparison else "",
        "gate_on": bool(comparison and gate_active(comparison.gate)),
        "baseline_sha": (comparison.baseline_sha if comparison else None) or (baseline.sha if baseline else None),
        "baseline_ref": (comparison.baseline_ref if comparison else None) or (baseline.ref if baseline else None),
        "baseline_updated_at": (comparison.baseline_updated_at if comparison else None)
        or (baseline.updated_at if baseline else None),
        "fingerprint": flatten(baseline.fingerprint) if baseline else {},
    }


def _labelling_link(top_up: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The labelling link: the run (whose artifacts hold the top-up folder) and the page's path in it."""
    if not top_up or not top_up.get("cards"):
        return None
    return {"cards": int(top_up["cards"]), "cases": int(top_up.get("cases", 0)), "path": str(top_up.get("path", "")),
            "draft": str(top_up.get("draft", "")), "url": str(top_up.get("url", ""))}
