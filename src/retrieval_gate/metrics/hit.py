from collections.abc import Sequence, Set


def hit_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """hit@k = 1 if any gold card is among the first k ranked cards, else 0.

    The primary success signal under disjunctive gold (``must_cite_one_of``): the contract
    needs only one of the listed cards.
    """
    return 1.0 if any(d in gold for d in ranked[:k]) else 0.0
