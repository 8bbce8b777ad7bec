"""Near-duplicate cards and the gold they make ambiguous (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.audit.minhash import components, signatures, similar_pairs
from retrieval_gate.audit.model import Finding
from retrieval_gate.models import Case


@dataclass(frozen=True)
class Cluster:
    cards: tuple[str, ...]  # sorted
    jaccard_min: float  # the smallest MinHash estimate among the confirmed pairs
    jaccard_max: float


def near_duplicate_clusters(
    *, ids: Sequence[str], shingles: Sequence[np.ndarray], threshold: float, num_perm: int, seed: int
) -> list[Cluster]:
    """Clusters of cards linked by pairs estimated at Jaccard ≥ ``threshold`` (single link: A~B
    and B~C put A, B, C together even when A and C are further apart)."""
    sigs = signatures(shingles, num_perm=num_perm, seed=seed)
    pairs = similar_pairs(sigs, threshold=threshold, num_perm=num_perm)
    groups = components(len(ids), pairs=pairs)
    where = {i: g for g, members in enumerate(groups) for i in members}
    estimates: dict[int, list[float]] = {}
    for i, _, estimate in pairs:
        estimates.setdefault(where[i], []).append(estimate)
    clusters = [
        Cluster(cards=tuple(sorted(ids[i] for i in members)),
                jaccard_min=min(estimates[g]), jaccard_max=max(estimates[g]))
        for g, members in enumerate(groups)
    ]
    return sorted(clusters, key=lambda c: c.cards)


def cluster_findings(clusters: Sequence[Cluster], *, threshold: float) -> list[Finding]:
    return [
        Finding(kind="near_duplicate_cards", severity="low", cards=c.cards,
                reason=f"{len(c.cards)} cards are near-duplicates (Jaccard ≈ {_j(c)} ≥ {threshold:g})",
                data={"jaccard_min": round(c.jaccard_min, 4), "jaccard_max": round(c.jaccard_max, 4)})
        for c in clusters
    ]


def ambiguous_gold(cases: Sequence[Case], clusters: Sequence[Cluster]) -> list[Finding]:
    """A case with a gold card whose near-duplicate twin is not gold: a retriever that returns
    the twin is scored a miss although it found the same text."""
    cluster_of: Mapping[str, Cluster] = {card: c for c in clusters for card in c.cards}
    out = []
    for case in cases:
        gold = set(case.gold)
        twins: dict[str, None] = {}
        for card in case.gold:
            cluster = cluster_of.get(card)
            if cluster is None:
                continue
            for other in cluster.cards:
                if other not in gold:
                    twins[other] = None
        if twins:
            named = sorted(twins)
            gold_in = sorted(g for g in case.gold if g in cluster_of)
            out.append(Finding(
                kind="ambiguous_gold", severity="high", cases=(case.id,), cards=tuple(sorted([*gold_in, *named])),
                reason=f"gold {', '.join(gold_in)} has near-duplicate{'s' if len(named) > 1 else ''} "
                       f"{', '.join(named)} that {'are' if len(named) > 1 else 'is'} not gold: retrieving "
                       f"{'them' if len(named) > 1 else 'it'} scores a miss",
                data={"gold": gold_in, "twins": named},
            ))
    return out


def card_groups(card_ids: Sequence[str], clusters: Sequence[Cluster]) -> dict[str, str]:
    """Each card → its source group: the first card of its near-duplicate cluster, else itself
    (shared source documents are grouped before splitting: docs/decisions.md)."""
    group = {card: card for card in card_ids}
    for cluster in clusters:
        for card in cluster.cards:
            group[card] = cluster.cards[0]
    return group


def _j(cluster: Cluster) -> str:
    if round(cluster.jaccard_min, 2) == round(cluster.jaccard_max, 2):
        return f"{cluster.jaccard_min:.2f}"
    return f"{cluster.jaccard_min:.2f}–{cluster.jaccard_max:.2f}"
