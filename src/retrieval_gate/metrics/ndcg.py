import math
from collections.abc import Sequence, Set


def ndcg_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """nDCG@k with binary gain (trec_eval ``ndcg_cut_k``).

    DCG@k  = Σ_{i=1..k} rel_i / log2(i + 1),  rel_i ∈ {0, 1}
    IDCG@k = Σ_{i=1..min(k, |gold|)} 1 / log2(i + 1)
    nDCG@k = DCG@k / IDCG@k  ∈ [0, 1]

    Sums are exact (``math.fsum``), so the value does not depend on summation order.
    """
    dcg = math.fsum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    idcg = math.fsum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / idcg
