"""Scoring speed: retrieval-gate's ``assemble_results`` vs ``pytrec_eval`` on the same run.

10,000 cases × 100 ranked ids, cutoffs 1,3,5,10, all six measures (hit, recall, ndcg, mrr,
precision, map). Both sides are timed in one process, on the same data, best of ``--repeat``:

- ours:        ``assemble_results`` (per-case scores, per-slice aggregates, completeness,
               the results model) — everything ``retrieval-gate score`` does after loading.
- pytrec_eval: ``RelevanceEvaluator`` construction + ``evaluate`` for ``ndcg_cut``, ``recall``,
               ``P``, ``map_cut``, ``success`` at the four cutoffs and ``recip_rank`` (uncut:
               trec_eval has no MRR@k, so this is *less* work than our four MRR@k).

Input building (models, dicts) is not timed on either side. Run:
``python benchmarks/bench_scoring.py [--cases 10000] [--depth 100] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import sys
import time
from pathlib import Path

import pytrec_eval

from retrieval_gate.metrics import metric_specs, to_cards
from retrieval_gate.metrics.grid import compile_grid
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.results import Results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.reference
from tests.reference import case_scores

KS = (1, 3, 5, 10)
TREC_MEASURES = {f"{m}.{','.join(map(str, KS))}" for m in ("ndcg_cut", "recall", "P", "map_cut", "success")}
TREC_MEASURES.add("recip_rank")


def make_data(n_cases: int, depth: int, seed: int) -> tuple[list[Case], dict[str, RankedList]]:
    """Random cases (1–5 gold cards from a 5,000-card pool, four locales) and rankings of
    ``depth`` distinct ids; each gold card is ranked with probability 0.7, at a rank drawn from an
    exponential with mean 8 (so most hits land in the top 10, as with a real retriever)."""
    rng = random.Random(seed)
    pool = [f"doc{i}" for i in range(5000)]
    cases: list[Case] = []
    rankings: dict[str, RankedList] = {}
    for i in range(n_cases):
        gold = rng.sample(pool, rng.randint(1, 5))
        qid = f"q{i}"
        cases.append(Case(id=qid, query=f"question {i}", gold=tuple(gold),
                          locale=rng.choice(["en", "pt-BR", "es-419", "de"])))
        ranked = rng.sample(pool, depth)
        for g in gold:
            if g not in ranked and rng.random() < 0.7:
                ranked[min(int(rng.expovariate(1 / 8)), depth - 1)] = g
        ranked = list(dict.fromkeys(ranked))
        rankings[qid] = RankedList(ids=tuple(ranked),
                                   scores=tuple(float(depth - j) for j in range(len(ranked))))
    return cases, rankings


def time_ours(case_set: CaseSet, rankings: dict[str, RankedList]) -> tuple[float, Results]:
    grid = metric_specs(KS)
    gc.collect()
    start = time.perf_counter()
    results = assemble_results(case_set=case_set, rankings=rankings, metrics=grid, ks=KS)
    return time.perf_counter() - start, results


def time_metrics_only(cases: list[Case], rankings: dict[str, RankedList]) -> float:
    """Just the per-case values (``case_scores`` on the de-duplicated ranking), no slices or models."""
    grid = compile_grid(metric_specs(KS))
    gc.collect()
    start = time.perf_counter()
    for case in cases:
        case_scores(to_cards(rankings[case.id].ids, None, limit=grid.depth), case.gold, grid)
    return time.perf_counter() - start


def time_pytrec(qrels: dict, run: dict) -> tuple[float, dict[str, dict[str, float]]]:
    gc.collect()
    start = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES)
    per_query = evaluator.evaluate(run)
    return time.perf_counter() - start, per_query


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    cases, rankings = make_data(args.cases, args.depth, args.seed)
    case_set = CaseSet(cases=tuple(cases), path="<bench>", sha256="0" * 64, format="jsonl",
                       lines={c.id: i + 1 for i, c in enumerate(cases)})
    qrels = {c.id: {g: 1 for g in c.gold} for c in cases}
    run = {qid: dict(zip(r.ids, r.scores or (), strict=True)) for qid, r in rankings.items()}

    ours, only, trec = [], [], []
    for _ in range(args.repeat):  # interleaved, so drift on a shared machine hits every side
        t, results = time_ours(case_set, rankings)
        ours.append(t)
        only.append(time_metrics_only(cases, rankings))
        t, per_query = time_pytrec(qrels, run)
        trec.append(t)

    # The two sides must agree case by case, or the timing compares different work.
    pairs = {"ndcg": "ndcg_cut_{k}", "recall": "recall_{k}", "precision": "P_{k}",
             "map": "map_cut_{k}", "hit": "success_{k}"}
    worst = max(abs(case.scores[f"{m}@{k}"] - per_query[case.id][t.format(k=k)])
                for case in results.cases for m, t in pairs.items() for k in KS)

    n_values = args.cases * len(metric_specs(KS))
    print(f"{args.cases:,} cases × {args.depth} ranked ids × k={','.join(map(str, KS))} · "
          f"6 measures ({n_values:,} per-case values) · best of {args.repeat} · "
          f"Python {platform.python_version()}")
    print(f"{'':<40}{'seconds':>10}{'per case':>12}")
    best_ours, best_trec = min(ours), min(trec)
    best_only = min(only)
    for label, seconds in (("retrieval-gate assemble_results", best_ours),
                           ("  of which per-case metrics only", best_only),
                           ("pytrec_eval construct + evaluate", best_trec)):
        print(f"{label:<40}{seconds:>10.3f}{seconds / args.cases * 1e6:>10.1f}µs")
    print(f"ratio assemble_results / pytrec_eval: {best_ours / best_trec:.2f} · "
          f"largest per-case difference from pytrec_eval: {worst:.1e}")


if __name__ == "__main__":
    main()
