"""The cost curve: how each step of an eval grows with the KB and the golden set
(figures: docs/performance.md, "The cost curve").

Part ``store`` — for each KB size (chunks) a fresh process (so its peak RSS is its own) builds a
persistent Chroma store, then for each number of cases and each search mode (exact = brute force
over the stored vectors, hnsw = Chroma's index) runs the eval (the first point cold, the others on
the store it built) and times its steps:

    embed   the model: passages (first point only) and the queries not embedded before
    insert  store sync minus embedding: Chroma's insert and HNSW index build (first point only)
    read    opening the search: exact reads every stored vector into one matrix
    load    read + check KB and cases, chunk
    search  retrieve every case, query embedding excluded
    score   scoring, slices, results model
    write   results JSON (files.dumps_json)
    report  the PR comment (render.markdown.render_comment)
    wall / CPU  the whole eval (run_evals), CPU = this process's user + system, all threads

``--embedder synthetic`` (default): a deterministic stand-in (vectors from a hash of the text:
embedding costs nothing, so the store, search, scoring and report costs are isolated).
``--embedder model``: the real bundled all-MiniLM-L6-v2 (offline, our embedder), on SciFact text
(``--dataset``, default ../shared/datasets/scifact; skipped when absent): the judged documents
first, then the others, cycled past 5,183 with the title dropped on the 2nd pass and one more
leading word dropped on each later pass (distinct texts, SciFact lengths); the 300 test queries
cycled with `` (variant r)`` appended on pass r ≥ 1, gold = their qrels.

Part ``compare`` — ``compare()`` and ``render_comment`` on synthetic paired results of 1k–100k
cases (bench_compare.make_results: 144 rows, 10,000 resamples per row).

The machine is shared: each point is one run (medians of ``--repeat`` for compare); read the
growth, not the third digit. Run:
``PYTHONPATH=src python benchmarks/bench_cost_curve.py [--kb 1000,10000,50000] [--cases 1000,10000]
[--embedder synthetic|model] [--part store|compare|both] [--raw rows.jsonl]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DIM = 384
DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"


class SyntheticEmbedder:
    """Deterministic stand-in for a model (our Embedder interface): a text's vector comes from a
    hash of it; a query ``find: <card text>`` lands near that card's vector."""

    def identity(self):
        from retrieval_gate.embed.base import ModelIdentity

        return ModelIdentity(name="synthetic", sha256="5" * 64)

    @staticmethod
    def _raw(text: str) -> np.ndarray:
        digest = hashlib.shake_128(text.encode("utf-8")).digest(DIM)
        return np.frombuffer(digest, dtype=np.int8).astype(np.float32)

    def _many(self, texts: Sequence[str], query: bool) -> np.ndarray:
        rows = []
        for text in texts:
            vec = self._raw(text[len("find: "):]) * 2.0 + self._raw(text) if query else self._raw(text)
            rows.append(vec / np.linalg.norm(vec))
        return np.stack(rows).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._many(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._many(texts, query=True)


class TimedEmbedder:
    """Our Embedder interface around another, adding up the seconds spent per kind of text."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = {"document": 0.0, "query": 0.0}

    def identity(self):
        return self.inner.identity()

    def _timed(self, kind: str, call, texts: Sequence[str]) -> np.ndarray:
        began = time.perf_counter()
        out = call(texts)
        self.seconds[kind] += time.perf_counter() - began
        return out

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._timed("document", self.inner.embed_documents, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._timed("query", self.inner.embed_queries, texts)


def write_real_inputs(folder: Path, dataset: Path, *, chunks: int, cases: int) -> tuple[Path, Path]:
    """SciFact text at the requested sizes (see the module docstring)."""
    def rows(name: str) -> list[dict]:
        return [json.loads(line) for line in (dataset / name).read_text(encoding="utf-8").splitlines() if line.strip()]

    docs, queries = rows("corpus.jsonl"), rows("queries.jsonl")
    qrels: dict[str, list[str]] = {}
    for line in (dataset / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, []).append(did)
    judged = {d for gold in qrels.values() for d in gold}
    docs = [d for d in docs if d["_id"] in judged] + [d for d in docs if d["_id"] not in judged]
    queries = [q for q in queries if q["_id"] in qrels]
    kb = folder / f"kb{chunks}.jsonl"
    if not kb.exists():
        out = []
        for i in range(chunks):
            doc, rnd = docs[i % len(docs)], i // len(docs)
            if rnd == 0:
                card = {"id": doc["_id"], "title": doc.get("title", ""), "text": doc["text"]}
            else:
                words = doc["text"].split()
                card = {"id": f"{doc['_id']}~{rnd}", "title": "", "text": " ".join(words[rnd - 1:])}
            out.append(json.dumps(card) + "\n")
        kb.write_text("".join(out))
    path = folder / f"cases{chunks}-{cases}.jsonl"
    path.write_text("".join(
        json.dumps({"id": f"q{j}", "query": queries[j % len(queries)]["text"]
                    + (f" (variant {j // len(queries)})" if j >= len(queries) else ""),
                    "gold": qrels[queries[j % len(queries)]["_id"]]}) + "\n"
        for j in range(cases)))
    return kb, path


def write_inputs(folder: Path, *, chunks: int, cases: int) -> tuple[Path, Path]:
    kb = folder / f"kb{chunks}.jsonl"
    if not kb.exists():
        kb.write_text("".join(json.dumps({"id": f"c{i}", "title": "", "text": f"card {i} text {i * 7919 % 1000}"})
                              + "\n" for i in range(chunks)))
    path = folder / f"cases{chunks}-{cases}.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{j}", "query": f"find: card {j % chunks} text "
                                        f"{(j % chunks) * 7919 % 1000}", "gold": [f"c{j % chunks}"]}) + "\n"
                            for j in range(cases)))
    return kb, path


def store_point(chunks: int, case_counts: list[int], modes: list[str], *, embedder_kind: str,
                dataset: Path) -> None:
    """One KB size, in this process: prints one JSON line per (cases, mode) and the peak RSS."""
    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.files import dumps_json
    from retrieval_gate.render.markdown import render_comment
    from retrieval_gate.settings import SuiteConfig
    from retrieval_gate.store.settings import StoreSettings

    if embedder_kind == "model":
        from retrieval_gate.embed.resolve import resolve_model
        from retrieval_gate.embed.sentence import SentenceTransformerEmbedder

        embedder = TimedEmbedder(SentenceTransformerEmbedder(resolve_model(SuiteConfig().model)))
    else:
        embedder = TimedEmbedder(SyntheticEmbedder())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for cases in case_counts:
            kb, case_file = (write_real_inputs(folder, dataset, chunks=chunks, cases=cases) if embedder_kind == "model"
                             else write_inputs(folder, chunks=chunks, cases=cases))
            for mode in modes:
                config = SuiteConfig(kb=str(kb), cases=str(case_file), k=(1, 3, 5, 10),
                                     store=StoreSettings(path=str(folder / "store"), exact=mode == "exact"))
                before = dict(embedder.seconds)
                began, cpu_began = time.perf_counter(), time.process_time()
                results = run_evals(suite_config=config, suite="curve", embedder=embedder)["dense"]
                total, cpu = time.perf_counter() - began, time.process_time() - cpu_began
                embed_docs = embedder.seconds["document"] - before["document"]
                embed_queries = embedder.seconds["query"] - before["query"]
                t = results.extras["timings"]
                sync_s = results.extras["store"]["seconds"]
                started = time.perf_counter()
                text = dumps_json(results.to_json_data())
                write_s = time.perf_counter() - started
                started = time.perf_counter()
                render_comment(results=results, comparison=None, baseline=None, links={})
                report_s = time.perf_counter() - started
                store = results.extras["store"]
                print(json.dumps({
                    "chunks": chunks, "cases": cases, "mode": mode, "embedder": embedder_kind, "added": store["added"],
                    "queries_embedded": results.extras["embedding"]["queries_embedded"],
                    "embed_docs_s": round(embed_docs, 3), "embed_queries_s": round(embed_queries, 3),
                    "insert_s": round(sync_s - embed_docs, 3), "read_s": round(t["build_s"] - sync_s, 3),
                    "build_s": t["build_s"], "load_s": t["load_s"], "search_s": round(t["search_s"] - embed_queries, 3),
                    "score_s": round(total - t["load_s"] - t["build_s"] - t["search_s"], 3),
                    "write_s": round(write_s, 3), "report_s": round(report_s, 3), "json_mb": round(len(text) / 1e6, 2),
                    "wall_s": round(total, 3), "cpu_s": round(cpu, 3),
                    "hit@10": round(results.aggregates["overall"]["hit@10"].value, 4),
                }), flush=True)
    peak_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps({"chunks": chunks, "peak_rss_mb": peak_mb}), flush=True)


def store_part(kb_sizes: list[int], case_counts: list[int], modes: list[str], *, embedder_kind: str,
               dataset: Path, raw: Path | None) -> None:
    print("| KB chunks | cases | search | embed s (passages + queries) | insert s | read s | load s | search s "
          "| ms/query | score s | write s | report s | wall s | CPU s | hit@10 |")
    print("|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    peaks = {}
    for chunks in kb_sizes:
        done = subprocess.run([sys.executable, __file__, "--point", str(chunks), "--embedder", embedder_kind,
                               "--dataset", str(dataset), "--cases", ",".join(map(str, case_counts)),
                               "--modes", ",".join(modes)],
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO / "src")})
        if done.returncode != 0:
            print(f"| {chunks} | failed: {done.stderr[-500:]!r} |")
            continue
        for line in done.stdout.splitlines():
            row = json.loads(line)
            if raw is not None:
                with raw.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row) + "\n")
            if "peak_rss_mb" in row:
                peaks[chunks] = row["peak_rss_mb"]
                continue
            embed = f"{row['embed_docs_s']:.2f} + {row['embed_queries_s']:.2f}"
            print(f"| {row['chunks']:,} | {row['cases']:,} | {row['mode']} | {embed} | {row['insert_s']:.2f} "
                  f"| {row['read_s']:.2f} | {row['load_s']:.2f} | {row['search_s']:.2f} "
                  f"| {1000 * row['search_s'] / row['cases']:.2f} | {row['score_s']:.2f} | {row['write_s']:.2f} "
                  f"| {row['report_s']:.2f} | {row['wall_s']:.2f} | {row['cpu_s']:.2f} | {row['hit@10']} |", flush=True)
    print("peak RSS per KB size (one process each, all its points): "
          + ", ".join(f"{c:,} chunks {mb:,} MB" for c, mb in peaks.items()))


def compare_part(case_counts: list[int], repeat: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_compare import make_results

    from retrieval_gate.baseline.update import update_baseline
    from retrieval_gate.compare.comparison import compare
    from retrieval_gate.compare.gate import GateSettings
    from retrieval_gate.render.markdown import render_comment

    print("| cases | compare s (median) | per case µs | comment s | comment chars |")
    print("|--:|--:|--:|--:|--:|")
    gate = GateSettings(fail_on_regression=True)
    for n in case_counts:
        before, after = make_results(n, seed=7, changed=0.3)
        baseline = update_baseline(baseline=None, results=before, sha="bench", ref="main", timestamp=None)
        times, comparison = [], None
        for _ in range(repeat):
            began = time.perf_counter()
            comparison = compare(results=after, baseline=baseline, gate=gate)
            times.append(time.perf_counter() - began)
        began = time.perf_counter()
        text = render_comment(results=after, comparison=comparison, baseline=baseline, links={})
        comment_s = time.perf_counter() - began
        median = statistics.median(times)
        print(f"| {n:,} | {median:.2f} | {1e6 * median / n:.0f} | {comment_s:.2f} | {len(text):,} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", default="1000,10000,50000,100000,200000")
    parser.add_argument("--cases", default="1000,10000")
    parser.add_argument("--modes", default="exact,hnsw")
    parser.add_argument("--compare-cases", default="1000,10000,50000,100000")
    parser.add_argument("--part", choices=["store", "compare", "both"], default="both")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--embedder", choices=["synthetic", "model"], default="synthetic")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="SciFact (BEIR) for --embedder model")
    parser.add_argument("--raw", type=Path, help="append every row as a JSON line to this file")
    parser.add_argument("--point", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [int(x) for x in args.cases.split(",")]
    modes = args.modes.split(",")
    if args.point:
        store_point(args.point, cases, modes, embedder_kind=args.embedder, dataset=args.dataset)
        return
    if args.embedder == "model" and not (args.dataset / "corpus.jsonl").is_file():
        print(f"skipped: --embedder model needs SciFact at {args.dataset} (corpus.jsonl, queries.jsonl, qrels.tsv)")
        return
    print(f"os.cpu_count() = {os.cpu_count()}; embedder: {args.embedder}, dim {DIM}")
    if args.part in ("store", "both"):
        store_part([int(x) for x in args.kb.split(",")], cases, modes, embedder_kind=args.embedder,
                   dataset=args.dataset, raw=args.raw)
    if args.part in ("compare", "both"):
        compare_part([int(x) for x in args.compare_cases.split(",")], args.repeat)


if __name__ == "__main__":
    main()
