import math
from collections.abc import Mapping, Sequence, Set


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


def graded_ndcg_at_k(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """nDCG@k with the grade as gain, as trec_eval ``ndcg_cut_k`` (and pytrec_eval).

    DCG@k  = Σ_{i=1..k} max(g_i, 0) / log2(i + 1),  g_i = the grade of the i-th card (0 unjudged)
    IDCG@k = Σ_{i=1..k} g*_i / log2(i + 1),  g* = the positive grades sorted descending
    nDCG@k = DCG@k / IDCG@k, and 0 when no grade is positive. Negative grades gain nothing.
    """
    dcg = math.fsum(max(gains.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = math.fsum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0
