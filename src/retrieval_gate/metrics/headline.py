"""The headline: which measures a report leads with, and at which k. Pure.

hit@k first (the success signal, docs/decisions.md), then recall@k (a lower bound under disjunctive
gold) and nDCG@k (the ranking signal). The headline k is 5 when measured (a common context
budget for a RAG answer), else the largest k. Every report, the gate's judged rows, the baseline's history
and the action's outputs use these definitions.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

HEADLINE_MEASURES = ("hit", "recall", "ndcg")


def default_headline_k(ks: Sequence[int]) -> int:
    """5 when measured, else the largest k."""
    return 5 if 5 in ks else max(ks)


def headline_names(headline_k: int, measured: Collection[str] | None = None,
                   measures: Sequence[str] = HEADLINE_MEASURES) -> list[str]:
    """``["hit@5", "recall@5", "ndcg@5"]``, keeping only the names in ``measured`` when given."""
    names = [f"{m}@{headline_k}" for m in measures]
    return names if measured is None else [n for n in names if n in measured]
