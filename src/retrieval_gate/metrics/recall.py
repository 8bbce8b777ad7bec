from collections.abc import Sequence, Set


def recall_at_k(ranked: Sequence[str], gold: Set[str], k: int) -> float:
    """recall@k = |gold ∩ top-k| / |gold|   (trec_eval ``recall_k``).

    A lower bound under disjunctive gold: retrieving one of two acceptable cards scores 0.5
    although the contract is met. Read hit@k as the success signal.
    """
    return sum(1 for d in ranked[:k] if d in gold) / len(gold)
