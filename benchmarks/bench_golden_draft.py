"""``cases draft`` on a public collection with human judgements (SciFact, ../shared/datasets), its
test queries turned into a query log: each repeated by a seeded count, a paraphrased variant of
some (a prefix and a suffix a search box sees), a few planted e-mail addresses and phone numbers.

1. ``pool``: draft at --depth 10 over dense + BM25 with every distinct query drawn (--size
   covers them all); the share of the collection's judged-relevant documents the pool holds,
   against each single system's pool at the same depth (the draft's ``pool.found`` says which
   system found each card); then a simulated labeller judges the pooled candidates by the
   official qrels, and hit@k / recall@k of dense and BM25 on that golden set is set beside the
   official judgements' on the same queries.
2. ``log10k``: wall time of a 10,000-line log with ~9,000 distinct queries, over the example KB
   (48 cards: the log's cost, not the KB's; SciFact's KB embedding is timed in ``pool``).
3. ``log1m``: a 1,000,000-line log (Zipf-distributed traffic over 200,000 distinct queries):
   exact deduplication while streaming, then the seeded traffic-weighted pre-sample
   (``golden.draw.MAX_EMBEDDED``) before anything is embedded; wall time and peak memory.

4. ``prep``: only the part before the embedding of ``log1m``'s log (streaming, cleaning, exact
   deduplication, pre-sample): its wall time, memory and the share of traffic the sample covers.

Usage: python benchmarks/bench_golden_draft.py pool|log10k|log1m|prep WORKDIR   (prints one JSON line)
"""

from __future__ import annotations

import json
import random
import resource
import sys
import time
from pathlib import Path

from retrieval_gate.golden.cases_draft import DraftOptions, draft_cases
from retrieval_gate.overrides import StoreOverrides, SuiteOverrides
from retrieval_gate.settings import ConfigFile, resolve_suite

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "scifact"
if not DATA.is_dir():
    DATA = Path("/work/shared/datasets/scifact")
PREFIXES = ("", "", "", "is it true that ", "evidence: ", "paper on ")
SUFFIXES = ("", "", "", "?", " study", " - source")


def queries_and_qrels() -> tuple[dict[str, str], dict[str, set[str]]]:
    queries = {}
    for line in (DATA / "queries.jsonl").read_text().splitlines():
        obj = json.loads(line)
        queries[str(obj["_id"])] = " ".join(obj["text"].split())
    qrels: dict[str, set[str]] = {}
    for line in (DATA / "qrels.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        if int(s) > 0:
            qrels.setdefault(q, set()).add(d)
    return {q: t for q, t in queries.items() if q in qrels}, qrels


EXAMPLE_KB = Path(__file__).resolve().parents[1] / "examples" / "kb"


def suite(work: Path, kb: Path = DATA):
    return resolve_suite(ConfigFile(), suite="bench", config_path=None,
                         overrides=SuiteOverrides(kb=str(kb), store=StoreOverrides(mode="persistent",
                                                                                   path=str(work / "store"))))


def run(work: Path, log: Path, kb: Path = DATA, **options) -> tuple[object, float]:
    began = time.perf_counter()
    result = draft_cases(suite_config=suite(work, kb), suite="bench", options=DraftOptions(log=log, **options))
    return result, time.perf_counter() - began


def pool_bench(work: Path) -> dict:
    queries, qrels = queries_and_qrels()
    rng = random.Random(0)
    lines, variant_of = [], {}
    for qid, text in queries.items():
        lines += [text] * rng.randint(1, 20)
        if rng.random() < 0.3:
            v = rng.choice(PREFIXES[3:]) + text + rng.choice(SUFFIXES[3:])
            lines.append(v)
            variant_of[v] = qid
    for i in range(5):
        lines.append(f"contact me at user{i}@example.org about {rng.choice(list(queries.values()))[:40]}")
        lines.append(f"call +1 415 555 01{i:02d} re claims")
    rng.shuffle(lines)
    log = work / "scifact_log.txt"
    log.write_text("\n".join(lines) + "\n")
    began = time.perf_counter()
    result, wall = run(work, log, size=len(queries) + 20, depth=10)
    by_text = {" ".join(t.casefold().split()): q for q, t in queries.items()}
    found = {"pool": 0, "dense": 0, "bm25": 0}
    judged = 0
    sim_gold: dict[str, set[str]] = {}
    official: dict[str, set[str]] = {}
    for e in result.entries:
        qid = by_text.get(" ".join(e.query.casefold().split())) or variant_of.get(e.query)
        if qid is None:
            continue
        rel = qrels[qid]
        judged += len(rel)
        pool = {c.card for c in e.candidates}
        found["pool"] += len(rel & pool)
        for system in ("dense", "bm25"):
            found[system] += len({c for c in rel if system in e.pool.found.get(c, [])})
        sim_gold[e.id] = rel & pool
        official[e.id] = rel
    # the simulated labeller's golden set against the official one: each system's own ranking
    from retrieval_gate.evaluation.chunks import suite_chunks
    from retrieval_gate.evaluation.dense_parts import DenseParts, Silent
    from retrieval_gate.load.kb import load_kb
    from retrieval_gate.retrieve.bm25 import IndexUnit
    from retrieval_gate.retrieve.factory import RetrieverBuilder
    from retrieval_gate.retrieve.spec import parse_retriever_list

    cfg = suite(work)
    kb = load_kb(DATA)
    chunks = suite_chunks(kb, chunking=cfg.chunking, model=cfg.model)
    dense = DenseParts(embed=cfg.embed, store=cfg.store, chunking=cfg.chunking, overfetch=cfg.overfetch, suite="bench",
                       embedder=None, vector_store=None, progress=Silent())
    builder = RetrieverBuilder(kb=kb, dense=dense.build(kb=kb, chunks=chunks),
                               bm25_units=[IndexUnit(id=c.id, card_id=c.parent_id, text=c.text, metadata=c.metadata)
                                           for c in chunks])
    ids = [e.id for e in result.entries if e.id in official]
    texts = [e.query for e in result.entries if e.id in official]
    measured = {}
    for spec in parse_retriever_list("dense,bm25"):
        ranked = builder.build(spec).search(texts, 100, [None] * len(texts))
        for k in (1, 10, 100):
            for name, gold in (("simulated", sim_gold), ("official", official)):
                hits = [bool(set(r.ids[:k]) & gold[i]) for i, r in zip(ids, ranked, strict=True) if gold[i]]
                measured[f"{spec.name} hit@{k} {name}"] = round(sum(hits) / len(hits), 4)
                rec = [len(set(r.ids[:k]) & gold[i]) / len(gold[i])
                       for i, r in zip(ids, ranked, strict=True) if gold[i]]
                measured[f"{spec.name} recall@{k} {name}"] = round(sum(rec) / len(rec), 4)
    dense.close()
    return {"bench": "pool", "log_lines": len(lines), "drafted": len(result.entries), "judged_relevant": judged,
            "pool_recall": round(found["pool"] / judged, 4), "dense_alone": round(found["dense"] / judged, 4),
            "bm25_alone": round(found["bm25"] / judged, 4), "masked": dict(result.clean.masked),
            "near_duplicates": result.near, "draft_wall_s": round(wall, 1),
            "total_wall_s": round(time.perf_counter() - began, 1), "hit": measured}


def synthetic_log(path: Path, *, lines: int, distinct: int, seed: int) -> None:
    """``lines`` lines over ``distinct`` queries (SciFact's claims with a seeded variation), Zipf traffic."""
    queries, _ = queries_and_qrels()
    base = list(queries.values())
    rng = random.Random(seed)
    words = [w for t in base for w in t.split()]
    made = [f"{rng.choice(PREFIXES)}{base[i % len(base)]} {rng.choice(words)} {rng.choice(words)}".strip()
            for i in range(distinct)]
    weights = [1.0 / (r + 1) for r in range(distinct)]
    with open(path, "w") as handle:
        for chunk in range(0, lines, 100_000):
            handle.write("\n".join(rng.choices(made, weights=weights, k=min(100_000, lines - chunk))) + "\n")


def log_bench(work: Path, *, lines: int, distinct: int) -> dict:
    log = work / f"log_{lines}.txt"
    began = time.perf_counter()
    synthetic_log(log, lines=lines, distinct=distinct, seed=1)
    made_s = time.perf_counter() - began
    result, wall = run(work, log, kb=EXAMPLE_KB, size=400, depth=10)  # the log's cost: a small KB
    return {"bench": f"log{lines}", "lines": lines, "distinct": result.distinct, "embedded": result.presampled,
            "near_duplicates": result.near, "intents": len(result.intents), "drafted": len(result.entries),
            "wall_s": round(wall, 1), "log_written_s": round(made_s, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def prep_bench(work: Path) -> dict:
    """Only what runs before anything is embedded, on the 1,000,000-line log ``log1m`` wrote:
    streaming, cleaning, exact deduplication and the pre-sample."""
    from retrieval_gate.golden.draw import presample
    from retrieval_gate.golden.log_clean import RawQuery, clean_log
    from retrieval_gate.golden.log_reader import iter_log

    log = work / "log_1000000.txt"
    began = time.perf_counter()
    rows = (RawQuery(line=n, text=t, count=c, fields=f) for n, t, c, f in iter_log(log, problems=[]))
    distinct, report = clean_log(rows)
    sample = presample(distinct, seed=0)
    return {"bench": "prep1m", "lines": report.read, "distinct": len(distinct), "embedded": len(sample),
            "sampled_traffic_share": round(sum(q.count for q in sample) / sum(q.count for q in distinct), 4),
            "wall_s": round(time.perf_counter() - began, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> None:
    mode, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[:3]
    if mode == "pool":
        out = pool_bench(work)
    elif mode == "prep":
        out = prep_bench(work)
    elif mode == "log10k":
        out = log_bench(work, lines=10_000, distinct=9_000)
    else:
        out = log_bench(work, lines=1_000_000, distinct=200_000)
    with open("/proc/loadavg") as handle:
        out["load_before_after"] = [load, handle.read().split()[:3]]
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
