"""What a run leaves for the workflow: step outputs, and annotations on regressed rows. Pure
except ``annotate``, which writes through the runner."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from retrieval_gate.compare.gate import format_p
from retrieval_gate.compare.model import BAD_STATUSES, gate_fails
from retrieval_gate.metrics.names import HEADLINE_MEASURES
from retrieval_gate.publish.runner import Runner
from retrieval_gate.render.changes import change_line
from retrieval_gate.render.verdict import needs_labels_words
from retrieval_gate.score.scoring import OVERALL

if TYPE_CHECKING:
    from retrieval_gate.compare.model import Comparison
    from retrieval_gate.score.results import Results

# Every output any mode writes; action.yml declares exactly these (checked by a test).
OUTPUT_NAMES = (
    "mode", "verdict", "gate_status", "regressed", "n", "headline_k",
    "hit_at_k", "recall_at_k", "ndcg_at_k", "delta_hit_at_k", "delta_recall_at_k", "delta_ndcg_at_k",
    "metrics_json", "comment_url", "comment_file", "results_path", "comparison_path", "html_path", "junit_path",
    "baseline_path", "baseline_ref", "baseline_commit", "baseline_file", "audit_file", "audit_commit",
)


def annotate(runner: Runner, comparison: Comparison | None, *, gate_applies: bool = True) -> None:
    """``::warning`` per regressed / below-floor row; ``::error`` per gate failure."""
    if comparison is None:
        return
    for row in comparison.rows:
        if row.status in BAD_STATUSES:
            runner.annotate("warning", row_message(row), title=f"retrieval-gate: {row.metric} {row.status}")
    if gate_applies and comparison.verdict == "fail":
        for failure in comparison.failures or ["the retrieval gate failed"]:
            runner.annotate("error", failure, title="retrieval-gate: gate failed")
    if gate_applies and comparison.verdict == "needs-labels":
        runner.annotate("error" if gate_fails(comparison) else "warning", needs_labels_words(comparison),
                        title="retrieval-gate: needs labels")


def annotate_lost_cases(runner: Runner, comparison: Comparison | None, *, cases_file: str | None) -> None:
    """``::warning file=<cases>,line=N`` at each lost case's line in the golden set: its gold
    card's rank before → after, and the cause (render.changes words)."""
    if comparison is None or not cases_file:
        return

    for change in comparison.changed_cases:
        if change.movement != "lost-hit":
            continue
        runner.annotate("warning", f"{change.id} lost its hit: {change_line(change).text}",
                        title=f"retrieval-gate: {change.id} lost its hit", file=cases_file, line=change.line)


def row_message(row: Any) -> str:
    """One line for a regressed row: metric, slice, baseline → current, delta, n, uncertainty."""
    parts = [f"{row.metric} on {row.slice}: {_fmt(row.baseline) or '–'} → {_fmt(row.current) or '–'}"]
    if row.delta is not None:
        parts.append(f"Δ {row.delta:+.4f}")
    parts.append(f"n={row.n}")
    if row.ci is not None:
        level = f"{100 * (row.ci_level if getattr(row, 'ci_level', None) else 0.95):.1f}".removesuffix(".0")
        parts.append(f"{level}% CI [{row.ci[0]:+.4f}, {row.ci[1]:+.4f}]")
    if row.p_value is not None:
        shown = format_p(row.p_value)
        parts.append(f"p{shown}" if shown.startswith("<") else f"p={shown}")
    if row.status == "below_floor" and row.floor is not None:
        parts.append(f"floor {row.floor:.4f}")
    return ", ".join(parts)


def step_outputs(*, results: Results, comparison: Comparison | None, mode: str,
                 verdict: str | None = None) -> dict[str, str]:
    """The step's outputs (all strings): headline metrics at the headline k and their deltas,
    n, verdict (pass | fail | no-baseline | none), regressed, and every overall metric as JSON."""
    k = results.headline_k
    overall = results.aggregates.get(OVERALL, {})
    rows = {row.metric: row for row in comparison.rows if row.slice == OVERALL} if comparison else {}
    out: dict[str, str] = {"mode": str(mode), "headline_k": str(k)}
    for measure in HEADLINE_MEASURES:
        name = f"{measure}@{k}"
        cell = overall.get(name)
        row = rows.get(name)
        out[f"{measure}_at_k"] = _fmt(cell.value) if cell is not None else ""
        out[f"delta_{measure}_at_k"] = _fmt(row.delta) if row is not None and row.delta is not None else ""
    hit = overall.get(f"hit@{k}")
    out["n"] = str(hit.n if hit is not None else results.completeness.scored)
    out["verdict"] = verdict or (comparison.verdict if comparison is not None else "none")
    out["gate_status"] = comparison.verdict if comparison is not None else "none"
    out["regressed"] = "true" if comparison is not None and comparison.regressed else "false"
    metrics: dict[str, Any] = {}
    for name, cell in sorted(overall.items()):
        entry: dict[str, Any] = {"value": cell.value, "n": cell.n}
        row = rows.get(name)
        if row is not None:
            entry.update(baseline=row.baseline, delta=row.delta, status=row.status, n_paired=row.n)
        metrics[name] = entry
    out["metrics_json"] = json.dumps(metrics, sort_keys=True)
    return out


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
