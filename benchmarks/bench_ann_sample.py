"""What the HNSW path's sample check costs (figures: docs/performance.md, "The ANN sample check").

On every run searched through HNSW (``--no-exact``, or a store above ``exact_max_chunks``), the
eval searches a seeded sample of 100 of its queries exactly, streamed over the stored vectors
page by page (``ChromaStore.exact_cards`` → ``store/chroma_index.exact_top_cards``), and the HNSW
index again for the same queries (``evaluation/ann_check.ann_sample_check``). For each store size
a fresh process (its peak RSS its own) builds a persistent Chroma store of N chunks (two a card,
384-dim vectors from ``bench_cost_curve.SyntheticEmbedder``: embedding costs nothing), then times:

    read     the read-back check every sync already makes (``read_verified``: every stored vector)
    hnsw     the HNSW search of the 100 sampled queries (k = 10)
    check    ``ann_sample_check``'s whole cost: the HNSW search above + the streamed exact search
    peak     the check's peak of Python and numpy allocations (tracemalloc, MB, a second run):
             one page of the store read back (10,000 rows), whatever the store's size

and the check's recall@10 on the sound index. Queries are ``find: <a chunk's text>`` (they land near
that chunk). The machine is shared (2 cores): each point is one run; read the growth.
Run: ``PYTHONPATH=src python benchmarks/bench_ann_sample.py [--sizes 10000,50000,200000]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def point(size: int, folder: Path) -> dict:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import random

    from bench_cost_curve import SyntheticEmbedder

    from retrieval_gate.chunk.chunking import make_chunk
    from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
    from retrieval_gate.evaluation.ann_check import ann_sample_check
    from retrieval_gate.evaluation.dense_parts import DenseParts, Silent
    from retrieval_gate.retrieve.dense import DenseRetriever
    from retrieval_gate.store.chroma import ChromaStore, collection_name
    from retrieval_gate.store.settings import StoreSettings
    from retrieval_gate.store.verify import read_verified

    chunks = [make_chunk(id=f"c{i:07d}", parent_id=f"card{i // 2:07d}", text=f"chunk {i} of the bench")
              for i in range(size)]
    settings = StoreSettings(path=str(folder / "store"), exact=False)
    store = ChromaStore(settings, collection=collection_name("bench"))
    cache = EmbeddingCache(store.cache_file)
    embedder = CachedEmbedder(SyntheticEmbedder(), cache)
    began = time.perf_counter()
    store.sync(chunks=chunks, embedder=embedder, chunking={"strategy": "bench"})
    built = time.perf_counter() - began
    began = time.perf_counter()
    read_verified(store._collection, keep=False)
    read = time.perf_counter() - began
    rng = random.Random(1)
    queries = [f"find: {chunks[rng.randrange(size)].text}" for _ in range(400)]
    retriever = DenseRetriever(index=store.index(exact=False), embedder=embedder, overfetch=3)
    vectors = embedder.embed_queries(queries)  # embedded once, as the eval's own search does
    began = time.perf_counter()
    retriever.rank(vectors[:100], 10)
    hnsw = time.perf_counter() - began
    dense = DenseParts.__new__(DenseParts)  # the parts the check reads, as an eval holds them
    dense.store, dense.retriever, dense.embedder, dense.progress = store, retriever, embedder, Silent()
    checked = ann_sample_check(dense=dense, queries=queries, filters=[None] * len(queries), ks=(1, 5, 10))
    assert checked is not None
    tracemalloc.start()  # a second time, traced (tracing slows it: timed above, untraced)
    ann_sample_check(dense=dense, queries=queries, filters=[None] * len(queries), ks=(1, 5, 10))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    cache.close()
    store.close()
    entry, seconds = checked
    return {"chunks": size, "build_s": round(built, 1), "read_s": round(read, 2), "hnsw_100_s": round(hnsw, 3),
            "check_s": round(seconds, 2), "peak_mb": round(peak / 2**20, 1),
            "recall_at": entry["recall_at"], "note": entry["note"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000,200000")
    parser.add_argument("--point", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        print(json.dumps(point(args.point, Path(args.folder))))
        return
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([sys.executable, __file__, "--point", str(size), "--folder", tmp],
                                 capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    print("| chunks | read-back check (s) | HNSW, 100 queries (s) | sample check (s) | check's peak allocations (MB) "
          "| recall@1/5/10 |")
    print("|---:|---:|---:|---:|---:|---|")
    for r in rows:
        recall = "/".join(f"{r['recall_at'][k]:.3f}" for k in ("1", "5", "10"))
        print(f"| {r['chunks']:,} | {r['read_s']} | {r['hnsw_100_s']} | {r['check_s']} | {r['peak_mb']} "
              f"| {recall} |")


if __name__ == "__main__":
    main()
