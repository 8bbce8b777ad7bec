from collections.abc import Sequence, Set


def precision_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """precision@k = |gold ∩ top-k| / k   (trec_eval ``P_k``: the denominator is k even when
    fewer than k cards were retrieved)."""
    return sum(1 for d in ranked[:k] if d in gold) / k
