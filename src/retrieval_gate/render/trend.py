"""The trend of the headline metric: the baseline's history, then this run. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.metrics import parse_metric
from retrieval_gate.score.results import Results
from retrieval_gate.score.scoring import OVERALL


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


def trend(*, results: Results, baseline: Baseline | None, metric: str) -> Trend | None:
    """The headline metric over the baseline history (oldest first), then this run. None when
    there is nothing to draw a line through (fewer than two points). Each point is labelled by its
    short commit sha, else its date (never the ref: ``refs/heads/main`` cut to a label says nothing)."""
    points: list[TrendPoint] = []
    if baseline is not None:
        for i, entry in enumerate(baseline.history):
            if metric in entry.headline:
                label = entry.sha[:7] if entry.sha else ((entry.timestamp or "")[:10] or f"#{i + 1}")
                points.append(TrendPoint(label=label, value=entry.headline[metric]))
        if not points and metric in baseline.aggregates.get(OVERALL, {}):
            label = baseline.sha[:7] if baseline.sha else ((baseline.updated_at or "")[:10] or "baseline")
            points.append(TrendPoint(label=label, value=baseline.aggregates[OVERALL][metric].value))
    current = results.aggregates.get(OVERALL, {}).get(metric)
    if current is not None:
        points.append(TrendPoint(label="this run", value=current.value, current=True))
    if len(points) < 2:
        return None
    return Trend(metric=metric, display=Markup(parse_metric(metric).display), points=points)
