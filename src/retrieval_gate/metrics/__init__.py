"""Metrics: one small pure function per measure over a de-duplicated card ranking.

Each takes ``(ranked, gold, k)`` with a non-empty gold set and returns a float in [0, 1].
Aggregation lives in ``retrieval_gate.score``; names are parsed in ``names``.
"""

from collections.abc import Callable, Sequence, Set

from retrieval_gate.metrics.average_precision import average_precision_at_k
from retrieval_gate.metrics.hit import hit_at_k
from retrieval_gate.metrics.mrr import mrr_at_k
from retrieval_gate.metrics.names import (
    MEASURES as MEASURES_ALL,
)
from retrieval_gate.metrics.names import (
    MetricSpec,
    headline_k_problem,
    metric_grid,
    parse_k_list,
    parse_metric,
)
from retrieval_gate.metrics.ndcg import ndcg_at_k
from retrieval_gate.metrics.precision import precision_at_k
from retrieval_gate.metrics.ranking import dedupe_first, to_cards
from retrieval_gate.metrics.recall import recall_at_k

MetricFn = Callable[[Sequence[str], Set[str], int], float]

FUNCTIONS: dict[str, MetricFn] = {
    "hit": hit_at_k,
    "recall": recall_at_k,
    "ndcg": ndcg_at_k,
    "mrr": mrr_at_k,
    "precision": precision_at_k,
    "map": average_precision_at_k,
}

__all__ = [
    "FUNCTIONS",
    "MEASURES_ALL",
    "MetricSpec",
    "average_precision_at_k",
    "dedupe_first",
    "headline_k_problem",
    "hit_at_k",
    "metric_grid",
    "mrr_at_k",
    "ndcg_at_k",
    "parse_k_list",
    "parse_metric",
    "precision_at_k",
    "recall_at_k",
    "to_cards",
]
