"""Sharded embedding: N = 1, 2, 4 ``embed --shard I/N`` processes, then ``eval --cache-from``,
against one ``eval`` process doing everything.

On a SciFact subset (default: the first ``--queries`` test queries that have judgments, all their
judged docs, and other docs up to ``--docs``), with the bundled all-MiniLM-L6-v2:

1. single — ``retrieval-gate eval --ephemeral`` (embeds every passage and query);
2. for N in 1, 2, 4: each shard ``embed --shard I/N --out DIR`` as its own process, one after
   the other (each alone on the machine, as on its own CI runner); then
   ``eval --ephemeral --cache-from DIR`` — which must embed nothing — and its results compared
   with the single run's, byte for byte, without the fields that record when, how fast and what
   was embedded where (``created_at``, ``latency``, each case's ``latency_ms``,
   ``extras.timings``, ``extras.store.seconds``, ``extras.embedding``).

Prints each shard's wall time; the slowest shard is what a CI matrix waits for.
Run: ``PYTHONPATH=src python benchmarks/bench_shards.py [--docs 1024] [--queries 100]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"


def subset(dataset: Path, folder: Path, *, docs: int, queries: int) -> tuple[Path, Path]:
    qrels: dict[str, list[str]] = {}
    for i, line in enumerate((dataset / "qrels.tsv").read_text(encoding="utf-8").splitlines()):
        q, d, s = line.split("\t")
        if i == 0 and q == "query-id":
            continue
        if int(s) > 0:
            qrels.setdefault(q, []).append(d)
    picked = []
    for line in (dataset / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            if q["_id"] in qrels:
                picked.append(q)
        if len(picked) == queries:
            break
    wanted = {d for q in picked for d in qrels[q["_id"]]}
    cards = []
    for line in (dataset / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        if doc["_id"] in wanted or len(cards) < docs - len(wanted):
            cards.append({"id": doc["_id"], "title": doc.get("title", ""), "text": doc["text"]})
            wanted.discard(doc["_id"])
    kb = folder / "kb.jsonl"
    kb.write_text("".join(json.dumps(c) + "\n" for c in cards), encoding="utf-8")
    cases = folder / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": q["_id"], "query": q["text"], "gold": qrels[q["_id"]]}) + "\n"
                             for q in picked), encoding="utf-8")
    return kb, cases


def run(argv: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", *argv], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall


def comparable(path: Path) -> str:
    sys.path.insert(0, str(REPO))  # tests.reference
    from tests.reference import without_run_specific_fields

    data = without_run_specific_fields(json.loads(path.read_text(encoding="utf-8")))
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--docs", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--shards", default="1,2,4")
    args = parser.parse_args()
    if not (args.dataset / "corpus.jsonl").is_file():
        raise SystemExit(f"no BEIR dataset at {args.dataset}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        kb, cases = subset(args.dataset, folder, docs=args.docs, queries=args.queries)
        n_docs = sum(1 for _ in kb.open(encoding="utf-8"))
        print(f"SciFact subset: {n_docs} docs, {args.queries} queries; bundled all-MiniLM-L6-v2; "
              f"os.cpu_count() = {os.cpu_count()}")
        common = ["--kb", str(kb), "--cases", str(cases)]
        single_out = folder / "single.json"
        single = run(["eval", *common, "--ephemeral", "--out", str(single_out)])
        single_data = json.loads(single_out.read_text(encoding="utf-8"))
        ndcg = round(single_data["aggregates"]["overall"]["ndcg@10"]["value"], 4)
        print(f"single eval process (embeds everything): {single:.1f} s wall; nDCG@10 {ndcg}")
        print("| N | each shard's wall s | slowest | slowest / single | eval --cache-from wall s | embedded by eval "
              "| results identical |")
        print("|--:|---|--:|--:|--:|--:|---|")
        for count in (int(x) for x in args.shards.split(",")):
            walls = []
            for index in range(1, count + 1):
                walls.append(run(["embed", *common, "--shard", f"{index}/{count}",
                                  "--out", str(folder / f"n{count}" / f"s{index}")]))
            out = folder / f"sharded{count}.json"
            warm = run(["eval", *common, "--ephemeral", "--cache-from", str(folder / f"n{count}"), "--out", str(out)])
            emb = json.loads(out.read_text(encoding="utf-8"))["extras"]["embedding"]
            embedded = emb["passages_embedded"] + emb["queries_embedded"]
            same = comparable(out) == comparable(single_out)
            print(f"| {count} | {', '.join(f'{w:.1f}' for w in walls)} | {max(walls):.1f} | {max(walls) / single:.2f} "
                  f"| {warm:.1f} | {embedded} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
