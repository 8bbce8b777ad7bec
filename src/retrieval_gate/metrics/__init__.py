"""Metrics: the registry of measures (``measures.REGISTRY``: one record and one pure function per
measure), the grid that computes a case's measures in one pass (``grid``), names (``names``).

Aggregation lives in ``retrieval_gate.score``.
"""

from retrieval_gate.metrics.grid import dedupe_first, metric_specs, to_cards
from retrieval_gate.metrics.measures import DEFAULT_MEASURES, MEASURES, METRICS_HELP, REGISTRY, Measure
from retrieval_gate.metrics.names import (
    MetricSpec,
    headline_k_problem,
    parse_k_list,
    parse_measure,
    parse_metric,
)

__all__ = [
    "DEFAULT_MEASURES",
    "MEASURES",
    "METRICS_HELP",
    "REGISTRY",
    "Measure",
    "MetricSpec",
    "dedupe_first",
    "headline_k_problem",
    "metric_specs",
    "parse_k_list",
    "parse_measure",
    "parse_metric",
    "to_cards",
]
