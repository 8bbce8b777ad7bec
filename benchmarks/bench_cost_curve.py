"""The cost curve: how each step of an eval grows with the KB and the golden set (issue 13).

Part ``store`` — for each KB size (chunks) a fresh process (so its peak RSS is its own) builds a
persistent Chroma store with a deterministic **synthetic embedder** (vectors from a hash of the
text: embedding costs nothing, so the store, search, scoring and report costs are isolated), then
for each number of cases and each search mode (exact = brute force over the stored vectors,
hnsw = Chroma's index) runs the eval warm and times its steps:

    build   store sync (first run: insert every chunk and build the HNSW index)
    load    read + check KB and cases, chunk
    search  retrieve every case (the exact index first reads every vector from the store)
    score   scoring, slices, results model
    write   results JSON (files.dumps_json)
    report  the PR comment (render.markdown.render_comment)

Part ``compare`` — ``compare()`` and ``render_comment`` on synthetic paired results of 1k–100k
cases (bench_compare.make_results: 144 rows, 10,000 resamples per row).

The machine is shared: each point is one run (medians of ``--repeat`` for compare); read the
growth, not the third digit. Run:
``PYTHONPATH=src python benchmarks/bench_cost_curve.py [--kb 1000,10000,50000] [--cases 1000,10000]``.
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


def store_point(chunks: int, case_counts: list[int], modes: list[str]) -> None:
    """One KB size, in this process: prints one JSON line per (cases, mode) and the peak RSS."""
    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.files import dumps_json
    from retrieval_gate.render.markdown import render_comment
    from retrieval_gate.settings import SuiteConfig
    from retrieval_gate.store.settings import StoreSettings

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for cases in case_counts:
            kb, case_file = write_inputs(folder, chunks=chunks, cases=cases)
            for mode in modes:
                config = SuiteConfig(kb=str(kb), cases=str(case_file), k=(1, 3, 5, 10),
                                     store=StoreSettings(path=str(folder / "store"), exact=mode == "exact"))
                began = time.perf_counter()
                results = run_evals(suite_config=config, suite="curve", embedder=SyntheticEmbedder())["dense"]
                total = time.perf_counter() - began
                t = results.extras["timings"]
                started = time.perf_counter()
                text = dumps_json(results.to_json_data())
                write_s = time.perf_counter() - started
                started = time.perf_counter()
                render_comment(results=results, comparison=None, baseline=None, links={})
                report_s = time.perf_counter() - started
                store = results.extras["store"]
                print(json.dumps({
                    "chunks": chunks, "cases": cases, "mode": mode, "added": store["added"],
                    "build_s": t["build_s"], "load_s": t["load_s"], "search_s": t["search_s"],
                    "score_s": round(total - t["load_s"] - t["build_s"] - t["search_s"], 3),
                    "write_s": round(write_s, 3), "report_s": round(report_s, 3), "json_mb": round(len(text) / 1e6, 2),
                    "hit@10": round(results.aggregates["overall"]["hit@10"].value, 4),
                }), flush=True)
    peak_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps({"chunks": chunks, "peak_rss_mb": peak_mb}), flush=True)


def store_part(kb_sizes: list[int], case_counts: list[int], modes: list[str]) -> None:
    print("| KB chunks | cases | search | build s (insert + index) | load s | search s | ms/query | score s "
          "| write s | report s | hit@10 |")
    print("|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    peaks = {}
    for chunks in kb_sizes:
        done = subprocess.run([sys.executable, __file__, "--point", str(chunks),
                               "--cases", ",".join(map(str, case_counts)), "--modes", ",".join(modes)],
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO / "src")})
        if done.returncode != 0:
            print(f"| {chunks} | failed: {done.stderr[-500:]!r} |")
            continue
        for line in done.stdout.splitlines():
            row = json.loads(line)
            if "peak_rss_mb" in row:
                peaks[chunks] = row["peak_rss_mb"]
                continue
            build = f"{row['build_s']:.2f}" + ("" if row["added"] else " (warm)")
            print(f"| {row['chunks']:,} | {row['cases']:,} | {row['mode']} | {build} | {row['load_s']:.2f} "
                  f"| {row['search_s']:.2f} | {1000 * row['search_s'] / row['cases']:.2f} | {row['score_s']:.2f} "
                  f"| {row['write_s']:.2f} | {row['report_s']:.2f} | {row['hit@10']} |", flush=True)
    print("peak RSS per KB size (one process each, all its points): "
          + ", ".join(f"{c:,} chunks {mb:,} MB" for c, mb in peaks.items()))


def compare_part(case_counts: list[int], repeat: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_compare import make_results

    from retrieval_gate.compare.baseline_update import update_baseline
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
    parser.add_argument("--point", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [int(x) for x in args.cases.split(",")]
    modes = args.modes.split(",")
    if args.point:
        store_point(args.point, cases, modes)
        return
    print(f"os.cpu_count() = {os.cpu_count()}; synthetic embedder, dim {DIM}")
    if args.part in ("store", "both"):
        store_part([int(x) for x in args.kb.split(",")], cases, modes)
    if args.part in ("compare", "both"):
        compare_part([int(x) for x in args.compare_cases.split(",")], args.repeat)


if __name__ == "__main__":
    main()
