from collections.abc import Sequence, Set


def average_precision_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """AP@k = (1 / |gold|) · Σ_{i ≤ k, rel_i = 1} precision@i   (trec_eval ``map_cut_k``).
    Averaged over cases: MAP@k."""
    found = 0
    total = 0.0
    for i, d in enumerate(ranked[:k], start=1):
        if d in gold:
            found += 1
            total += found / i
    return total / len(gold)
