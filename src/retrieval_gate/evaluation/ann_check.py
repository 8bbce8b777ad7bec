"""How far the HNSW index is from exact search on one run (``--ann-check``)."""

from __future__ import annotations

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
