"""Decisive labels on a pooled golden set (docs/golden-set.md "Which labels decide"): Cranfield 1400
(../shared/datasets/cranfield: 1,400 documents, 225 queries, every pair judged by hand), a golden
set drafted from a dense + BM25 pool, a perfect labeller simulated from the official qrels, and
pairs of systems compared as a pull request would compare them.

- **Systems**, ranked by the project (``evaluation.run.run_evals``): ``dense`` and ``bm25`` (the
  pool), ``hybrid`` (RRF), ``bm25 k1=1.2 b=0.75``, ``bm25 unstemmed``, ``bm25 title-only``,
  ``dense first 300 chars`` (a truncated text), ``0.7 dense + 0.3 bm25`` (a min-max weighted fusion
  over the top 100) and ``dense + 2 random on top`` (two documents drawn at random, seeded, put
  above dense's ranking: a perturbed system whose top cards nobody judged).
- **Drafted set**: every query pooled as ``cases draft`` pools (``golden.draw.pool``, dense + BM25
  at depth 10), the pool judged from the qrels and applied by the project's rules
  (``golden.draft_entry.plan_draft``: a query whose pool holds no relevant document is left out;
  the pool's other cards become the "not relevant" sidecar).
- **A pair** (baseline → PR): the baseline's results scored on the drafted set and stored as a
  baseline (``baseline.update``, rankings kept); the PR's scored on the current labels; compared
  (``compare.comparison.compare``, ``judgements: pooled``, the default gate with
  ``fail_on_regression``: hit@5 on overall, one-sided exact sign test, α = 0.05, max drop 0.02).
- **Rounds**: compare → the first sitting of the decisive cards (``compare.comparison.
  decision_of``: the fewest cases whose cards, found not relevant, settle the verdict — what
  ``label top-up --results PR --baseline BASELINE`` writes) → the perfect labeller judges them
  (relevant = in the qrels; else the sidecar) → compare again, the baseline as stored in round 0 (its
  scores made with the old labels: ``compare`` rescores its stored rankings, ``rescored_cases``).
- **Official verdict**: the same two systems, the same cases, judged ``complete`` from the
  official qrels (trec_eval's reading).
- **Full top-up**: what ``label top-up --results PR.json`` asks today (``golden.topup.
  unjudged_pool``: the unjudged cards of the PR's top 10 in every case), before any round.

Usage: nice python benchmarks/bench_decisive_labels.py [--store DIR] [--rounds N]  (one JSON line)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from bench_pool_bias import _folder, _fusion, _rankings  # the same collection folders, runs and fusion

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "datasets" / "cranfield"
if not DATA.is_dir():
    DATA = Path("/work/shared/datasets/cranfield")
POOL_DEPTH = 10
TOP_UP_DEPTH = 10  # label top-up's default --depth
TRUNCATE = 300
KS = (5, 10)
INJECTED = 2  # random documents put on top of the dense ranking (a perturbed system)
PAIRS = (  # (baseline, PR): PRs outside the pool first
    ("dense", "bm25 k1=1.2 b=0.75"),
    ("dense", f"dense first {TRUNCATE} chars"),
    ("bm25", "hybrid"),
    ("bm25", "0.7 dense + 0.3 bm25"),
    ("bm25", "bm25 unstemmed"),
    ("bm25", "bm25 title-only"),
    ("dense", f"dense + {INJECTED} random on top"),
    ("dense", "bm25"),
)


def systems(store: Path) -> dict[str, dict[str, list[str]]]:
    full = _rankings(DATA, store=store, retrievers="dense,bm25,hybrid", suite="decisive")
    runs = {name: {c: ids for c, (ids, _) in ranked.items()} for name, ranked in full.items()}
    for name, options in (("bm25 k1=1.2 b=0.75", {"bm25_k1": 1.2, "bm25_b": 0.75}),
                          ("bm25 unstemmed", {"bm25_stemmer": "none"})):
        runs[name] = {c: ids for c, (ids, _) in _rankings(DATA, store=store, retrievers="bm25", options=options,
                                                          suite="decisive")["bm25"].items()}
    short = _folder(store / "work", "short", lambda d: " ".join(d.get("text", "").split())[:TRUNCATE])
    runs[f"dense first {TRUNCATE} chars"] = {c: ids for c, (ids, _) in _rankings(
        short, store=store / "short", retrievers="dense", suite="short")["dense"].items()}
    titles = _folder(store / "work", "titles", lambda d: " ".join(d.get("title", "").split()))
    runs["bm25 title-only"] = {c: ids for c, (ids, _) in _rankings(
        titles, store=store / "titles", retrievers="bm25", suite="titles")["bm25"].items()}
    runs["0.7 dense + 0.3 bm25"] = _fusion(full["dense"], full["bm25"], weight=0.7)
    # a perturbed system: INJECTED documents drawn at random (seeded) put on top of dense's ranking
    docs = sorted(json.loads(line)["_id"] for line in (DATA / "corpus.jsonl").read_text().splitlines())
    rng = np.random.default_rng(0)
    runs[f"dense + {INJECTED} random on top"] = {}
    for case in sorted(runs["dense"]):
        extra = [docs[i] for i in rng.choice(len(docs), size=INJECTED, replace=False)]
        runs[f"dense + {INJECTED} random on top"][case] = list(dict.fromkeys([*extra, *runs["dense"][case]]))
    return runs


def drafted(runs, qrels) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The drafted set a perfect labeller makes of a dense + BM25 pool: (gold, not relevant) per case."""
    from retrieval_gate.golden.decisions import Decision
    from retrieval_gate.golden.draft_entry import Candidate, DraftEntry, Pool, plan_draft
    from retrieval_gate.golden.draw import pool

    entries, records = {}, []
    for qid in qrels:
        order, found = pool({"dense": runs["dense"].get(qid, []), "bm25": runs["bm25"].get(qid, [])},
                            depth=POOL_DEPTH, case=qid, seed=0)
        entries[qid] = DraftEntry(id=qid, query=qid, candidates=[Candidate(card=c, sha="x") for c in order],
                                  pool=Pool(depth=POOL_DEPTH, systems=["dense", "bm25"], found=found))
        records += [Decision(case=qid, card=c, grade=int(c in qrels[qid]), sha="x") for c in order]
    plan = plan_draft(records, draft=entries, labeller="sim", date="2026-01-01")
    gold = {obj["id"]: set(obj["gold"]) for obj in plan.cases}
    return gold, {qid: {c.card for c in entries[qid].candidates} - gold[qid] for qid in gold}


def results_of(ranked: dict[str, list[str]], gold: dict[str, set[str]], not_relevant: dict[str, set[str]], *,
               kb: dict, sha: str, judgements: str):
    """The run scored on these labels, as ``score``/``eval`` would write it."""
    from retrieval_gate.metrics import metric_specs
    from retrieval_gate.models import Case, CaseSet, RankedList
    from retrieval_gate.score.assemble import assemble_results

    cases = tuple(Case(id=cid, query=cid, gold=tuple(sorted(cards))) for cid, cards in gold.items())
    results = assemble_results(case_set=CaseSet(cases, "cases.jsonl", sha, "jsonl"),
                               rankings={c.id: RankedList(ids=tuple(ranked.get(c.id, ()))) for c in cases},
                               metrics=metric_specs(KS, measures=("hit", "recall", "ndcg")), ks=KS, headline_k=5,
                               not_relevant=not_relevant, config={"judgements": judgements})
    return results.model_copy(update={"kb_cards": kb})


def run_pair(runs, qrels, gold0, sidecar0, *, base: str, pr: str, kb: dict, max_rounds: int) -> dict:
    from retrieval_gate.baseline.update import update_baseline
    from retrieval_gate.compare.comparison import compare, decision_of
    from retrieval_gate.compare.gate import GateSettings
    from retrieval_gate.golden.topup import RunTop, unjudged_pool

    gate = GateSettings(fail_on_regression=True)
    gold = {c: set(v) for c, v in gold0.items()}
    sidecar = {c: set(v) for c, v in sidecar0.items()}
    before = results_of(runs[base], gold, sidecar, kb=kb, sha="round0", judgements="pooled")
    baseline = update_baseline(baseline=None, results=before, sha="b", ref="main", timestamp="2026-01-01T00:00:00Z")
    judged = {c: gold[c] | sidecar[c] for c in gold}
    full = unjudged_pool([RunTop("pr", runs[pr])], judged=judged, depth=TOP_UP_DEPTH, cases=list(gold),
                         kb_cards=kb).total
    official_now = results_of(runs[pr], {c: qrels[c] for c in gold}, {}, kb=kb, sha="qrels", judgements="complete")
    official_before = results_of(runs[base], {c: qrels[c] for c in gold}, {}, kb=kb, sha="qrels",
                                 judgements="complete")
    official = compare(results=official_now, gate=gate, baseline=update_baseline(
        baseline=None, results=official_before, sha="b", ref="main", timestamp="2026-01-01T00:00:00Z"))
    row = {"baseline": base, "pr": pr, "cases": len(gold), "full_top_up_cards": full,
           "official": official.verdict, "official_lost_gained": _moved(official)}
    asked: list[int] = []
    decisive: list[int] = []  # the decisive cards (needs_labels.cards) before each round
    verdicts: list[str] = []
    rescored: list[int] = []
    for round_ in range(max_rounds + 1):
        now = results_of(runs[pr], gold, sidecar, kb=kb, sha=f"round{round_}", judgements="pooled")
        comparison = compare(results=now, baseline=baseline, gate=gate)
        verdicts.append(comparison.verdict if comparison.needs_labels is None
                        else f"needs-labels ({comparison.needs_labels.cards})")
        rescored.append(comparison.rescored_cases)
        if round_ == 0:
            row["before"] = verdicts[0]
            row["before_lost_gained"] = _moved(comparison)
        if comparison.verdict != "needs-labels" or round_ == max_rounds:
            row["final"] = comparison.verdict
            row["final_lost_gained"] = _moved(comparison)
            break
        decision = decision_of(results=now, baseline=baseline, gate=gate, rescore=True)
        assert decision is not None and decision.cards
        sitting = decision.cards[:decision.sitting]  # what `label top-up --baseline` writes
        asked.append(len(sitting))
        decisive.append(len(decision.cards))
        for card in sitting:  # the perfect labeller: every card of the sitting, judged from the qrels
            (gold if card.card in qrels[card.case] else sidecar)[card.case].add(card.card)
    row.update(verdicts=verdicts, asked_per_round=asked, decisive_per_round=decisive, rounds=len(asked),
               asked=sum(asked),
               share_of_full_top_up=round(sum(asked) / full, 4) if full else None,
               rescored_cases=rescored, agrees=row["final"] == row["official"])
    return row


def _moved(comparison) -> list[int | None]:
    row = next(r for r in comparison.rows if r.gated)
    return [row.n_lost, row.n_gained]


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=REPO / ".retrieval-gate" / "bench" / "decisive")
    parser.add_argument("--rounds", type=int, default=5, help="most rounds tried per pair")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    began = time.perf_counter()
    args.store.mkdir(parents=True, exist_ok=True)
    runs = systems(args.store)
    ranked_s = time.perf_counter() - began
    qrels: dict[str, set[str]] = {}
    for line in (DATA / "qrels.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        if int(s) > 0:
            qrels.setdefault(q, set()).add(d)
    from retrieval_gate.score.kb_manifest import KbCard

    docs = [json.loads(line)["_id"] for line in (DATA / "corpus.jsonl").read_text().splitlines()]
    kb = {d: KbCard(sha="x", title=d) for d in docs}
    gold, sidecar = drafted(runs, qrels)
    pairs = [run_pair(runs, qrels, gold, sidecar, base=b, pr=p, kb=kb, max_rounds=args.rounds) for b, p in PAIRS]
    return {"collection": "cranfield", "queries": len(qrels), "drafted_cases": len(gold),
            "pool": f"dense + bm25 at depth {POOL_DEPTH}", "gate": "hit@5 on overall, fail_on_regression, alpha 0.05",
            "pairs": pairs, "all_agree": all(p["agrees"] for p in pairs),
            "most_rounds": max(p["rounds"] for p in pairs),
            "largest_share": max((p["share_of_full_top_up"] or 0) for p in pairs),
            "wall_s": {"rank": round(ranked_s, 1), "total": round(time.perf_counter() - began, 1)}}


if __name__ == "__main__":
    print(json.dumps(main(), sort_keys=True))
    sys.exit(0)
