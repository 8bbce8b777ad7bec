"""Aggregation: the mean of each score key over the cases that carry it, per slice, with n."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from retrieval_gate.score.results import CaseResult, Completeness, Latency, MetricCell
from retrieval_gate.score.scoring import OVERALL


def aggregate(cases: Iterable[CaseResult]) -> dict[str, dict[str, MetricCell]]:
    """``{slice: {metric: MetricCell(value=mean, n)}}`` — averages over present keys only, so
    cases without gold never dilute a mean and n is honest (the empty-gold contract, docs/decisions.md)."""
    # Cases with the same slices and the same score keys (in the same order: one grid) form a
    # group whose rows are transposed once with zip; each slice then concatenates the columns
    # of the groups it appears in. math.fsum is exact, so the order of values does not matter.
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[tuple[float, ...]]] = {}
    for case in cases:
        scores = case.scores
        groups.setdefault((tuple(case.slices), tuple(scores)), []).append(tuple(scores.values()))
    columns: dict[str, dict[str, list[float]]] = {}
    for (slices, keys), rows in groups.items():
        transposed = list(zip(*rows, strict=True)) if keys else []
        for name in slices:
            cells = columns.setdefault(name, {})
            for metric, column in zip(keys, transposed, strict=True):
                cells.setdefault(metric, []).extend(column)
    return {
        name: {m: MetricCell(value=math.fsum(v) / len(v), n=len(v)) for m, v in sorted(columns[name].items())}
        for name in sorted(columns, key=_slice_order)
    }


def _slice_order(name: str) -> tuple[int, str]:
    return (0, "") if name == OVERALL else (1, name)


def completeness(cases: Sequence[CaseResult], unknown_run_ids: Iterable[str] = ()) -> Completeness:
    failed = [c.id for c in cases if c.status == "failed"]
    return Completeness(
        expected=len(cases),
        scored=sum(1 for c in cases if c.status == "scored"),
        no_gold=sum(1 for c in cases if c.status == "no_gold"),
        failed=len(failed),
        failed_ids=failed,
        unknown_run_ids=sorted(set(unknown_run_ids)),
    )


def latency_summary(cases: Sequence[CaseResult]) -> Latency | None:
    values = [c.latency_ms for c in cases if c.latency_ms is not None]
    if not values:
        return None
    import numpy as np  # only runs with latencies need it (start-up of `score` on a TREC run)

    arr = np.asarray(values, dtype=float)
    return Latency(
        n=len(values),
        p50_ms=round(float(np.percentile(arr, 50)), 3),
        p95_ms=round(float(np.percentile(arr, 95)), 3),
        mean_ms=round(float(arr.mean()), 3),
    )
