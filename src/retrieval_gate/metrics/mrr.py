from collections.abc import Sequence, Set


def mrr_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """Reciprocal rank cut at k: 1 / rank of the first gold card if it is within the top k,
    else 0 (trec_eval ``recip_rank`` on the run truncated to k). Averaged over cases: MRR@k."""
    for rank, d in enumerate(ranked[:k], start=1):
        if d in gold:
            return 1.0 / rank
    return 0.0
