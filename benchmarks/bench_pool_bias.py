"""Pool bias and ``label top-up`` on a collection with full human judgements (Cranfield 1400,
../shared/datasets/cranfield: 1,400 documents, 225 queries, 1,612 relevant pairs), a perfect
labeller simulated from its qrels, and nine systems — two of them the draft's default pool.

Systems, each ranked by the project (``evaluation.run.run_evals``; embeddings in the persistent
store's cache, so a rerun embeds nothing): ``dense`` and ``bm25`` (the draft's default pool),
``hybrid`` (RRF), ``bm25 k1=1.2 b=0.75``, ``bm25 unstemmed``, ``bm25 title-only``, ``dense
title-only``, ``dense first 300 chars`` (a truncated text) and a ``0.7·dense + 0.3·bm25`` weighted
fusion of min-max-normalised scores over the top 100 (computed here from the two runs).

Readings of each system's nDCG@10, recall@10 and hit@10, set against the official judgements'
(all 225 queries) by Kendall's τ-b over the nine systems' means (scipy):

- **draft** — every query drafted, pooled as ``cases draft`` pools (``golden.draw.pool``: dense +
  BM25 at ``--depth`` 10, and at 5, 20 and 30 for the default depth), the pool judged from the
  qrels and applied by the project's own rules (``golden.draft_entry.plan_draft``: a query with no
  relevant card in its pool is left out, the others' gold is their relevant pooled cards);
  unjudged cards count as not relevant (the standard reading);
- **condensed** — the same labels, every unjudged card removed from each ranking before scoring
  (Sakai 2007; computed here: the condensed reading of the "score" work may not be on this branch);
- **top-up** — ``golden.topup.unjudged_pool`` (``label top-up``'s core) over the top 10 of every
  system compared, judged from the qrels and applied as ``label apply --draft`` applies a top-up
  (``plan_draft``: relevant cards added to the cases' gold); standard reading.

Per pair of systems (36), the project's paired test (``stats.paired``) under each reading:
significant (p < 0.05) with a sign opposite to the official Δ — a significant result in the
wrong direction.

Usage: nice python benchmarks/bench_pool_bias.py [--store DIR]   (prints one JSON line)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "datasets" / "cranfield"
if not DATA.is_dir():
    DATA = Path("/work/shared/datasets/cranfield")
MEASURES = ("ndcg@10", "recall@10", "hit@10")
TOP = 10  # the depth every reading scores, and label top-up's --depth
DEPTHS = (5, 10, 20, 30)  # the draft's pool depths tried; 10 is the default
TRUNCATE = 300
ALPHA = 0.05


def _folder(work: Path, name: str, text_of) -> Path:
    """A BEIR folder holding the collection with each document's text replaced by ``text_of(doc)``."""
    out = work / name
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in (DATA / "corpus.jsonl").read_text().splitlines():
        doc = json.loads(line)
        lines.append(json.dumps({"_id": doc["_id"], "title": "", "text": text_of(doc) or "(empty)"}))
    (out / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    for name_ in ("queries.jsonl", "qrels.tsv"):
        (out / name_).write_bytes((DATA / name_).read_bytes())
    return out


def _rankings(folder: Path, *, store: Path, retrievers: str, options: dict | None = None,
              suite: str) -> dict[str, dict[str, tuple[list[str], list[float]]]]:
    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.settings import SuiteConfig

    config = SuiteConfig.model_validate({
        "kb": str(folder), "cases": str(folder), "k": [10, 100], "metrics": ["hit", "ndcg"], "headline_k": 10,
        "retriever": retrievers, "store": {"mode": "persistent", "path": str(store)}, "options": options or {}})
    out = {}
    for name, res in run_evals(suite_config=config, suite=suite).items():
        out[name] = {c.id: (list(c.retrieved), list(c.retrieved_scores)) for c in res.cases}
    return out


def _fusion(a: dict, b: dict, *, weight: float) -> dict[str, list[str]]:
    def norm(ids, scores):
        if not ids:
            return {}
        s = np.asarray(scores if scores else [len(ids) - i for i in range(len(ids))], dtype=float)
        span = s.max() - s.min()
        return dict(zip(ids, (s - s.min()) / span if span else np.ones_like(s), strict=True))

    out = {}
    for case in a:
        x, y = norm(*a[case]), norm(*b.get(case, ([], [])))
        fused = {d: weight * x.get(d, 0.0) + (1 - weight) * y.get(d, 0.0) for d in {*x, *y}}
        out[case] = sorted(fused, key=lambda d: (-fused[d], d))
    return out


def systems(work: Path, store: Path) -> dict[str, dict[str, list[str]]]:
    full = _rankings(DATA, store=store, retrievers="dense,bm25,hybrid", suite="pool-bias")
    runs = {name: {c: ids for c, (ids, _) in ranked.items()} for name, ranked in full.items()}
    runs["bm25 k1=1.2 b=0.75"] = {c: ids for c, (ids, _) in _rankings(
        DATA, store=store, retrievers="bm25", options={"bm25_k1": 1.2, "bm25_b": 0.75}, suite="pool-bias")
        ["bm25"].items()}
    runs["bm25 unstemmed"] = {c: ids for c, (ids, _) in _rankings(
        DATA, store=store, retrievers="bm25", options={"bm25_stemmer": "none"}, suite="pool-bias")["bm25"].items()}
    titles = _folder(work, "titles", lambda d: " ".join(d.get("title", "").split()))
    for name, ranked in _rankings(titles, store=store / "titles", retrievers="dense,bm25", suite="titles").items():
        runs[f"{name} title-only"] = {c: ids for c, (ids, _) in ranked.items()}
    short = _folder(work, "short", lambda d: " ".join(d.get("text", "").split())[:TRUNCATE])
    runs[f"dense first {TRUNCATE} chars"] = {c: ids for c, (ids, _) in _rankings(
        short, store=store / "short", retrievers="dense", suite="short")["dense"].items()}
    runs["0.7 dense + 0.3 bm25"] = _fusion(full["dense"], full["bm25"], weight=0.7)
    return runs


def score(runs: dict[str, dict[str, list[str]]], gold: dict[str, set[str]], *,
          judged: dict[str, set[str]] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Per system, per measure, the per-case scores over the cases of ``gold`` (in its order),
    through the project's scoring; ``judged``: the condensed reading (unjudged cards removed)."""
    from retrieval_gate.metrics import metric_specs
    from retrieval_gate.models import Case, RankedList
    from retrieval_gate.score.scoring import score_case

    specs = metric_specs((TOP,), measures=("ndcg", "recall", "hit"))
    cases = [Case(id=cid, query=cid, gold=tuple(sorted(cards))) for cid, cards in gold.items()]
    out = {}
    for name, ranked in runs.items():
        cols: dict[str, list[float]] = {m: [] for m in MEASURES}
        for case in cases:
            ids = ranked.get(case.id, [])
            if judged is not None:
                ids = [d for d in ids if d in judged.get(case.id, ())]
            result = score_case(case=case, ranking=RankedList(ids=tuple(ids)), metrics=specs)
            for m in MEASURES:
                cols[m].append(result.scores[m])
        out[name] = {m: np.asarray(v) for m, v in cols.items()}
    return out


def draft_labels(runs, qrels, *, depth: int) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The drafted golden set a perfect labeller makes of a dense + BM25 pool at ``depth``: (gold of
    the cases ``plan_draft`` keeps, every judged card per case incl. the not-relevant ones)."""
    from retrieval_gate.golden.decisions import Decision
    from retrieval_gate.golden.draft_entry import Candidate, DraftEntry, Pool, plan_draft
    from retrieval_gate.golden.draw import pool

    entries, records = {}, []
    for qid in qrels:
        order, found = pool({"dense": runs["dense"].get(qid, []), "bm25": runs["bm25"].get(qid, [])}, depth=depth,
                            case=qid, seed=0)
        entries[qid] = DraftEntry(id=qid, query=qid, candidates=[Candidate(card=c, sha="x") for c in order],
                                  pool=Pool(depth=depth, systems=["dense", "bm25"], found=found))
        records += [Decision(case=qid, card=c, grade=int(c in qrels[qid]), sha="x") for c in order]
    plan = plan_draft(records, draft=entries, labeller="sim", date="2026-01-01")
    gold = {obj["id"]: set(obj["gold"]) for obj in plan.cases}
    judged = {qid: {c.card for c in entries[qid].candidates} for qid in gold}
    return gold, judged


def top_up_labels(runs, qrels, *, gold, judged) -> tuple[dict[str, set[str]], int]:
    """``label top-up`` of every system compared (top ``TOP``), judged from the qrels, applied as
    ``label apply --draft`` applies it: the new gold and the cards asked."""
    from retrieval_gate.golden.decisions import Decision
    from retrieval_gate.golden.draft_entry import Candidate, DraftEntry, Pool, plan_draft
    from retrieval_gate.golden.topup import RunTop, unjudged_pool

    every = {d for ranked in runs.values() for ids in ranked.values() for d in ids}
    top = unjudged_pool([RunTop(name, ranked) for name, ranked in runs.items()], judged=judged, depth=TOP,
                        cases=list(gold), kb_cards=every)
    entries = {cid: DraftEntry(id=cid, query=cid, candidates=[Candidate(card=c, sha="x") for c in cards],
                               pool=Pool(depth=TOP, systems=list(runs), found=top.found[cid]), top_up=True)
               for cid, cards in top.cards.items()}
    records = [Decision(case=cid, card=c, grade=int(c in qrels[cid]), sha="x")
               for cid, cards in top.cards.items() for c in cards]
    plan = plan_draft(records, draft=entries, labeller="sim", date="2026-01-01")
    new = {cid: set(cards) for cid, cards in gold.items()}
    for d in plan.additions:
        new[d.case].add(d.card)
    return new, top.total


def kendall(a: dict[str, float], b: dict[str, float]) -> float:
    from scipy.stats import kendalltau

    names = sorted(a)
    return float(kendalltau([a[n] for n in names], [b[n] for n in names]).statistic)


def reading(scores, official_means, official_scores, *, all_means) -> dict:
    """τ against the official judgements over the same cases (``tau``) and over every query of
    the collection (``tau_all_queries``); the pairs; the means."""
    from retrieval_gate.stats.paired import paired

    means = {m: {s: float(v[m].mean()) for s, v in scores.items()} for m in MEASURES}
    out = {"tau": {m: round(kendall(means[m], official_means[m]), 3) for m in MEASURES},
           "tau_all_queries": {m: round(kendall(means[m], all_means[m]), 3) for m in MEASURES},
           "means": {m: {s: round(x, 4) for s, x in sorted(means[m].items())} for m in MEASURES}}
    wrong, swapped = {}, {}
    for m in MEASURES:
        bad, swaps = [], 0
        for a, b in itertools.combinations(sorted(scores), 2):
            truth = paired(official_scores[a][m], before=official_scores[b][m], resamples=2000)
            test = paired(scores[a][m], before=scores[b][m], resamples=2000)
            if np.sign(test.delta) != np.sign(truth.delta) and truth.delta != 0:
                swaps += 1
                if test.p < ALPHA:
                    bad.append(f"{a} vs {b}: Δ {test.delta:+.3f} p={test.p:.3f} (official Δ {truth.delta:+.3f}, "
                               f"p={truth.p:.3f})")
        wrong[m], swapped[m] = bad, swaps
    out["pairs_swapped"] = swapped
    out["significant_in_the_wrong_direction"] = {m: len(v) for m, v in wrong.items()}
    out["wrong_direction_pairs"] = {m: v for m, v in wrong.items() if v}
    return out


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=REPO / ".retrieval-gate" / "bench" / "pool-bias")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    began = time.perf_counter()
    args.store.mkdir(parents=True, exist_ok=True)
    runs = systems(args.store / "work", args.store)
    ranked_s = time.perf_counter() - began
    qrels: dict[str, set[str]] = {}
    for line in (DATA / "qrels.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        if int(s) > 0:
            qrels.setdefault(q, set()).add(d)
    official = score(runs, qrels)
    official_means = {m: {s: float(v[m].mean()) for s, v in official.items()} for m in MEASURES}
    report: dict = {"collection": "cranfield", "queries": len(qrels), "systems": sorted(runs),
                    "pool": "dense + bm25", "official": {m: {s: round(x, 4) for s, x in sorted(v.items())}
                                                         for m, v in official_means.items()}}
    for depth in DEPTHS:
        gold, judged = draft_labels(runs, qrels, depth=depth)
        # the official judgements over the drafted cases (the set the readings score)
        off = score(runs, {c: qrels[c] for c in gold})
        off_means = {m: {s: float(v[m].mean()) for s, v in off.items()} for m in MEASURES}
        row = {"cases": len(gold), "relevant_in_pool": round(sum(len(g) for g in gold.values())
                                                             / sum(len(qrels[c]) for c in qrels), 3),
               "draft": reading(score(runs, gold), off_means, off, all_means=official_means),
               "condensed": reading(score(runs, gold, judged=judged), off_means, off,
                                        all_means=official_means)}
        if depth == 10:
            topped, asked = top_up_labels(runs, qrels, gold=gold, judged=judged)
            row["top_up"] = reading(score(runs, topped), off_means, off, all_means=official_means)
            row["top_up"]["cards_asked"] = asked
            row["top_up"]["cards_asked_per_case"] = round(asked / len(gold), 2)
        report[f"depth_{depth}"] = row
    report["wall_s"] = {"rank": round(ranked_s, 1), "total": round(time.perf_counter() - began, 1)}
    return report


if __name__ == "__main__":
    print(json.dumps(main(), sort_keys=True))
    sys.exit(0)
