"""Several retrievers over the same cases, side by side, with paired deltas against a reference
(e.g. hybrid vs dense; ``X+rerank`` vs ``X`` is the reranker's ΔnDCG). Pure.

For retriever r, metric m and the reference retriever ref:

- ``value`` = r's mean of m over its cases with gold (its own aggregate), with ``n``;
- ``delta``, ``p_value`` (two sided) and ``ci`` at ``level`` over the n_p cases scored by both:
  the one paired test, ``stats.paired`` (its rounding rule, the exact sign test or the sign-flip
  test, Tango's or a t interval) — the same numbers as ``compare`` (same seed → same numbers).

Failed cases stay in: they are scored as empty rankings by both, exactly as in each results
file, so a retriever that fails more often is not flattered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.errors import UsageError
from retrieval_gate.metrics.names import HEADLINE_MEASURES, headline_names
from retrieval_gate.score.results import Results
from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.stats.paired import paired
from retrieval_gate.stats.sign_flip import DEFAULT_RESAMPLES

SIDE_BY_SIDE_SCHEMA_VERSION = 1
MEASURES_SHOWN = (*HEADLINE_MEASURES, "mrr")  # MRR too: where the first good card sits


class RetrieverCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: float | None = None
    n: int = 0
    delta: float | None = None  # vs the reference; None for the reference itself
    n_paired: int = 0
    ci: tuple[float, float] | None = None
    p_value: float | None = None


class RetrieverRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    retriever: str
    cells: dict[str, RetrieverCell]
    scored: int
    failed: int
    latency_p50_ms: float | None = None
    search_s: float | None = None


class SideBySide(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SIDE_BY_SIDE_SCHEMA_VERSION
    suite: str
    slice: str = OVERALL
    reference: str
    metrics: list[str]
    rows: list[RetrieverRow]
    stats: dict[str, Any] = Field(default_factory=dict)

    def to_json_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def default_metrics(results: Results) -> list[str]:
    """hit, recall, nDCG and MRR at the headline k, where measured."""
    return headline_names(results.headline_k, measured=results.metrics, measures=MEASURES_SHOWN)


def side_by_side(
    *, results: Mapping[str, Results], reference: str | None = None, metrics: Sequence[str] | None = None,
    slice_name: str = OVERALL, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
) -> SideBySide:
    """Compare every run in ``results`` (name → Results, in display order) with ``reference``
    (default: the first). Raises ``UsageError`` for an unknown reference or runs over different
    case sets."""
    if not results:
        raise UsageError("side by side needs at least one results")
    names = list(results)
    ref_name = reference if reference is not None else names[0]
    if ref_name not in results:
        raise UsageError(f"reference retriever {ref_name!r} is not among {', '.join(names)}")
    ref = results[ref_name]
    ids = [c.id for c in ref.cases]
    for name, run in results.items():
        if [c.id for c in run.cases] != ids:
            raise UsageError(f"{name!r} and {ref_name!r} were not run over the same cases")
    chosen = list(metrics) if metrics is not None else default_metrics(ref)
    ref_cases = {c.id: c for c in ref.cases}
    rows = []
    for name, run in results.items():
        aggregate = run.aggregates.get(slice_name, {})
        cells: dict[str, RetrieverCell] = {}
        for metric in chosen:
            own = aggregate.get(metric)
            cell = RetrieverCell(value=None if own is None else own.value, n=0 if own is None else own.n)
            if name != ref_name:
                pairs = [(c.scores[metric], ref_cases[c.id].scores[metric]) for c in run.cases
                         if slice_name in c.slices and metric in c.scores and metric in ref_cases[c.id].scores]
                if pairs:
                    stat = paired([now for now, _ in pairs], before=[before for _, before in pairs],
                                  resamples=resamples, seed=seed)
                    ci, _ = stat.interval(level)
                    cell = cell.model_copy(update={"delta": stat.delta, "n_paired": stat.n, "ci": ci,
                                                   "p_value": stat.p})
            cells[metric] = cell
        timings = run.extras.get("timings") or {}
        rows.append(RetrieverRow(retriever=name, cells=cells, scored=run.completeness.scored,
                        failed=run.completeness.failed,
                        latency_p50_ms=run.latency.p50_ms if run.latency is not None else None,
                        search_s=timings.get("search_s")))
    return SideBySide(suite=ref.suite, slice=slice_name, reference=ref_name, metrics=chosen, rows=rows,
                      stats={"method": "exact sign test (0/1 measures) or sign-flip test; CI: Tango's score "
                                       "interval or a paired t interval (stats.paired_interval)", "level": level,
                             "resamples": resamples, "seed": seed})
