"""How far the HNSW index is from exact search on one run: on every run searched through HNSW,
a seeded sample of its queries (``ann_sample_check``); on all of them when asked (``--ann-check``,
``ann_check``)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from typing import Any

from retrieval_gate.evaluation.dense_parts import DenseParts
from retrieval_gate.metrics.names import headline_names
from retrieval_gate.models import CaseSet, KnowledgeBase
from retrieval_gate.retrieve.dense import DenseRetriever
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.results import Results
from retrieval_gate.score.scoring import OVERALL


def ann_check(*, dense: DenseParts, case_set: CaseSet, kb: KnowledgeBase, queries: Sequence[str],
              filters: Sequence[dict[str, Any] | None], main: Results, grid: Any, ks: Sequence[int]) -> dict[str, Any]:
    """How far the HNSW index is from exact search on this run.

        recall@K = mean over queries of |top-K cards (HNSW) ∩ top-K cards (exact)| / |top-K cards (exact)|

    with K = the largest k; plus both runs' overall headline metrics and their difference
    (HNSW − exact), so a reader sees whether index noise could move a gate."""
    assert dense.retriever is not None and dense.store is not None and dense.embedder is not None
    main_is_exact = dense.retriever.index.name == "exact"
    other = DenseRetriever(index=dense.store.index(exact=not main_is_exact), embedder=dense.embedder,
                           overfetch=dense.overfetch)
    k = max(ks)
    vectors = dense.embedder.embed_queries(list(queries))
    other_ranked = other.rank(vectors, k, filters)
    main_ranked = [main_case.retrieved[:k] for main_case in main.cases]
    exact_lists = [list(r.ids[:k]) for r in other_ranked] if not main_is_exact else main_ranked
    hnsw_lists = main_ranked if not main_is_exact else [list(r.ids[:k]) for r in other_ranked]
    recalls = [len(set(h) & set(e)) / len(e) for h, e in zip(hnsw_lists, exact_lists, strict=True) if e]
    differing = sum(1 for h, e in zip(hnsw_lists, exact_lists, strict=True) if list(h) != list(e))
    other_results = assemble_results(case_set=case_set, rankings={c.id: r for c, r in zip(case_set.cases, other_ranked,
                                                                                            strict=True)},
                                     metrics=grid, ks=ks, kb=kb)
    exact_res, hnsw_res = (main, other_results) if main_is_exact else (other_results, main)
    hk = main.headline_k
    names = headline_names(hk, measured=main.metrics)
    overall_e = exact_res.aggregates.get(OVERALL, {})
    overall_h = hnsw_res.aggregates.get(OVERALL, {})
    return {
        "k": k,
        "recall": round(sum(recalls) / len(recalls), 6) if recalls else None,
        "queries": len(recalls),
        "queries_differing": differing,
        "exact": {n: overall_e[n].value for n in names if n in overall_e},
        "hnsw": {n: overall_h[n].value for n in names if n in overall_h},
        "delta": {n: round(overall_h[n].value - overall_e[n].value, 6) for n in names
                  if n in overall_h and n in overall_e},
    }


SAMPLE_QUERIES = 100  # queries searched exactly on every HNSW run (all of them when fewer)
SAMPLE_SEED = 57  # which ones: the same for the same cases, run after run
MIN_RECALL = 0.9  # below this recall of the exact top-k cards, the run carries a note
TIE = 1e-5  # a card scoring within this of the exact k-th score is as good as it (float32 scores)


def sample_of(n: int, size: int = SAMPLE_QUERIES, seed: int = SAMPLE_SEED) -> list[int]:
    """The indexes of the sampled queries, ascending: a seeded draw, so the same cases give the
    same sample."""
    return sorted(random.Random(seed).sample(range(n), min(n, size)))


def sample_recall(hnsw: Sequence[Sequence[tuple[str, float]]], exact: Sequence[Sequence[tuple[str, float]]],
                  k: int) -> tuple[float | None, int]:
    """(recall@k of the HNSW answers against the exact ones, the queries it is the mean over):

        recall@k = mean over queries of |{c ∈ top-k (HNSW) : c ∈ top-k (exact) or s(c) ≥ s_k − TIE}| / |top-k (exact)|

    s_k the k-th exact score (the last when fewer came back): a card tied with the exact k-th is as
    good an answer, since ties may be broken either way (recall by distance, as ann-benchmarks);
    queries the exact search finds nothing for are left out. Pure."""
    recalls = []
    for h, e in zip(hnsw, exact, strict=True):
        e = e[:k]
        if e:
            found = {card for card, _score in e}
            good = sum(1 for card, score in h[:k] if card in found or score >= e[-1][1] - TIE)
            recalls.append(min(len(e), good) / len(e))
    return (round(math.fsum(recalls) / len(recalls), 6) if recalls else None), len(recalls)


def ann_sample_check(*, dense: DenseParts, queries: Sequence[str], filters: Sequence[dict[str, Any] | None],
                     ks: Sequence[int]) -> tuple[dict[str, Any], float] | None:
    """What an HNSW run checks on every run: a seeded sample of its queries (``sample_of``)
    searched exactly, streamed over the stored vectors (``ChromaStore.exact_cards``: memory one
    page), against the HNSW index's answer for the same queries: ``sample_recall`` at every k of
    the suite (``recall`` at the largest, ``recall_at`` each), and a ``note`` when any falls below
    ``MIN_RECALL``. None when the dense side is not searched through HNSW or its store cannot
    search exactly. Returns the extras entry and its seconds."""
    store, retriever, embedder = dense.store, dense.retriever, dense.embedder
    exact_cards = getattr(store, "exact_cards", None)
    if retriever is None or embedder is None or exact_cards is None or retriever.index.name != "hnsw" or not queries:
        return None
    began = time.perf_counter()
    k = max(ks)
    picks = sample_of(len(queries))
    wheres = [filters[i] for i in picks]
    vectors = embedder.embed_queries([queries[i] for i in picks])
    hnsw = [list(zip(r.ids[:k], r.scores or (), strict=False)) for r in retriever.rank(vectors, k, wheres)]
    exact = exact_cards(vectors, k, wheres)
    recall_at = {str(cut): sample_recall(hnsw, exact, cut)[0] for cut in sorted(set(ks))}
    recall, measured = sample_recall(hnsw, exact, k)
    low = [(cut, value) for cut, value in recall_at.items() if value is not None and value < MIN_RECALL]
    note = None
    if low:
        cut, value = min(low, key=lambda item: item[1])
        note = (f"ANN check: on {measured} sampled queries, the HNSW index returned {value:.3f} of the exact "
                f"top-{cut} cards (below {MIN_RECALL}): its numbers may not be the ones exact search gives (a damaged "
                "or too coarse index); rerun with --exact, raise store.hnsw_search_ef, or delete the store's chroma/ "
                "folder to rebuild the index")
    differing = sum(1 for h, e in zip(hnsw, exact, strict=True) if [c for c, _ in h] != [c for c, _ in e])
    return ({"k": k, "queries": measured, "sampled": len(picks), "seed": SAMPLE_SEED, "recall": recall,
             "recall_at": recall_at, "min_recall": MIN_RECALL, "queries_differing": differing, "note": note},
            time.perf_counter() - began)
