"""The example suite measured through a LangChain app, against an independent computation from
the framework's own output (docs/retrievers.md, "Framework retrievers").

The app (``tests/framework_apps.py``): each Markdown card of ``examples/kb`` split at blank lines
(525 chunks of 48 cards, ``metadata["card_id"]``), a LangChain ``InMemoryVectorStore`` over the
bundled all-MiniLM-L6-v2, ``as_retriever(search_kwargs={"k": 4})``. Measured three ways:

1. ``retrieval-gate eval --retriever langchain:tests.framework_apps:langchain_vectors --option
   id_key=card_id`` (``run_evals``);
2. the same app through the "obvious glue" of issue 56, ``python:`` with
   ``[d.metadata["card_id"] for d in retriever.invoke(query, k=limit)]`` (``glue_search`` below);
3. independently: the retriever asked once for every chunk (``search_kwargs={"k": 525}``), its
   documents' card ids de-duplicated by first occurrence and cut at k, scored by hand (hit,
   recall, MRR) and by pytrec_eval (nDCG).

And, for scale, what the glue gave before ``python:`` over-fetched: the top k *chunks* mapped to
cards (fewer than k distinct cards where a card has several of them). Exit 1 when (1) or (2)
differs from (3) in any case's ranking or any figure.

Run: ``python benchmarks/bench_frameworks.py [--k 5]`` (loads the model; ~1 min on 2 idle cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]


def glue_search(query: str, limit: int) -> list[str]:
    """Issue 56's glue: a team's ``python:`` function over its LangChain retriever."""
    from tests.framework_apps import langchain_vectors

    return [d.metadata["card_id"] for d in langchain_vectors().invoke(query, k=limit)]


def first_cards(ids: list[str], k: int) -> list[str]:
    seen: list[str] = []
    for card in ids:
        if card not in seen:
            seen.append(card)
    return seen[:k]


def figures(rankings: dict[str, list[str]], gold: dict[str, list[str]], k: int) -> dict[str, float]:
    import pytrec_eval

    qrels = {cid: dict.fromkeys(cards, 1) for cid, cards in gold.items()}
    run = {cid: {card: float(k - i) for i, card in enumerate(rankings[cid][:k])} or {"__none__": 0.0} for cid in gold}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"}).evaluate(run)
    hit = recall = rr = 0.0
    for cid, cards in gold.items():
        top = rankings[cid][:k]
        hit += 1.0 if set(top) & set(cards) else 0.0
        recall += len(set(top) & set(cards)) / len(set(cards))
        rr += next((1.0 / (i + 1) for i, card in enumerate(top) if card in cards), 0.0)
    n = len(gold)
    return {"hit": hit / n, "recall": recall / n, "ndcg": sum(t[f"ndcg_cut_{k}"] for t in trec.values()) / n,
            "mrr": rr / n}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    k = args.k
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from tests import framework_apps as apps

    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.settings import SuiteConfig

    cases_path = REPO / "examples" / "cases.jsonl"


    cases = [json.loads(line) for line in cases_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    gold = {c["id"]: c["gold"] for c in cases if c.get("gold")}

    began = time.perf_counter()
    retriever = apps.langchain_vectors()  # built (and the chunks embedded) once, shared by every row
    built_s = time.perf_counter() - began

    spec_lc = "langchain:tests.framework_apps:langchain_vectors"
    spec_glue = f"python:{Path(__file__).resolve()}:glue_search"
    config = SuiteConfig(kb=str(REPO / "examples" / "kb"), cases=str(cases_path), k=(1, 3, k, 10),
                         retriever=f"{spec_lc},{spec_glue}", options={"id_key": "card_id"})
    began = time.perf_counter()
    measured = run_evals(suite_config=config, suite="default", created_at="2026-01-01T00:00:00Z")
    eval_s = time.perf_counter() - began

    full = retriever.model_copy(update={"search_kwargs": {"k": len(apps.paragraphs())}})
    ranked_chunks = {c["id"]: [d.metadata["card_id"] for d in full.invoke(c["query"])] for c in cases}
    independent = {cid: first_cards(ids, 10) for cid, ids in ranked_chunks.items()}
    chunk_cut = {cid: first_cards(ids[:k], k) for cid, ids in ranked_chunks.items()}  # before over-fetch

    rows: list[tuple[str, dict[str, float], int, Any]] = []
    ok = True
    for spec in (spec_lc, spec_glue):
        results = measured[spec]
        overall = results.aggregates["overall"]
        row = {name: overall[f"{name}@{k}"].value for name in ("hit", "recall", "ndcg", "mrr")}
        rankings = {c.id: list(c.retrieved) for c in results.cases}
        same_rankings = all(rankings[cid] == independent[cid] for cid in rankings)
        expected = figures(independent, gold, k)
        same_figures = all(abs(row[m] - expected[m]) < 1e-12 for m in row)
        ok &= same_rankings and same_figures and results.completeness.failed == 0
        rows.append((spec.split(":")[0] if spec == spec_lc else "python: glue", row,
                     sum(1 for r in rankings.values() if len(r) < k), same_rankings and same_figures))
    rows.append(("independent (the framework's documents)", figures(independent, gold, k),
                 sum(1 for r in independent.values() if len(r) < k), None))
    rows.append((f"top {k} chunks → cards (no over-fetch)", figures(chunk_cut, gold, k),
                 sum(1 for r in chunk_cut.values() if len(r) < k), None))

    print(f"example suite: {len(cases)} cases, {len(gold)} with gold; {len(apps.paragraphs())} chunks of "
          f"{len({p[1] for p in apps.paragraphs()})} cards; k={k}; {platform.python_version()}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'':42} hit@{k}  recall@{k}  nDCG@{k}  MRR@{k}  rankings < {k} cards  equal to independent")
    for name, row, short, same in rows:
        said = "" if same is None else ("yes" if same else "NO")
        print(f"{name:42} {row['hit']:.4f}  {row['recall']:.4f}     {row['ndcg']:.4f}  {row['mrr']:.4f}  "
              f"{short:>19}  {said}")
    print(f"app built (525 chunks embedded): {built_s:.1f} s; both evals: {eval_s:.1f} s "
          f"(k passed as {measured[spec_lc].config['details']['k_passed_as']})")
    print("OK: equal" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
