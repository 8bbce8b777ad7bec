"""``retrieval-gate sweep`` against the separate ``eval`` runs it replaces, on the example suite.

The grid: chunk size × overlap × retriever (the bundled model, dense, and BM25), plus the suite's
own settings (the reference). Measured, each step a fresh process (`retrieval-gate` on PATH):

1. the sweep, cold (an empty store folder): wall time; texts the model embedded (the progress
   lines) against the distinct chunk texts of every chunking (worked out here with ``chunk_kb``);
2. the same sweep again on that store: wall time, texts embedded (goal: 0);
3. one ``retrieval-gate eval`` per point, in turn, sharing one fresh store folder (what a user
   does by hand: the cache is shared, each run loads the model and opens the store): summed wall time;
4. ``sweep --shard 1/2`` and ``2/2``, each in its own fresh store (two machines), then
   ``sweep merge``: the merged ``sweep.json`` against the cold run's, byte for byte without the
   wall-clock seconds (the one run-specific figure);

and the knee each numeric axis got.

Run: ``python benchmarks/bench_sweep.py [--sizes 500,1000,2000] [--overlaps 0,75] [--retrievers dense,bm25]
[--unit characters|tokens]`` (tokens: ``--unit tokens --sizes 128,256,512 --overlaps 0,19``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(args: list[str], *, cwd: Path) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(["retrieval-gate", *args], cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"retrieval-gate {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return seconds, done.stderr


def embedded(stderr: str) -> list[int]:
    return [int(n) for n in re.findall(r"· embedded (\d+), reused", stderr)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,1000,2000")
    parser.add_argument("--overlaps", default="0,75")
    parser.add_argument("--retrievers", default="dense,bm25")
    parser.add_argument("--unit", default="characters", choices=["characters", "tokens"])
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # tests.reference
    from tests.reference import without_timings

    from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
    from retrieval_gate.embed.tokens import load_tokens
    from retrieval_gate.files import dumps_json
    from retrieval_gate.load.kb import load_kb

    sizes = [int(v) for v in args.sizes.split(",")]
    overlaps = [int(v) for v in args.overlaps.split(",")]
    retrievers = args.retrievers.split(",")
    axes = ["--axis", f"chunking.unit={args.unit}", "--axis", f"chunking.size={args.sizes}",
            "--axis", f"chunking.overlap={args.overlaps}",
            "--axis", f"retriever={args.retrievers}"]
    config = ["--config", str(REPO / "retrieval-gate.yml")]
    out: dict[str, object] = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "unit": args.unit,
                              "sizes": sizes,
                              "overlaps": overlaps, "retrievers": retrievers}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cold_s, cold_err = timed(["sweep", *config, *axes, "--store", str(root / "store"),
                                  "--out", str(root / "sweep.json")], cwd=root)
        sweep = json.loads((root / "sweep.json").read_text())
        kb = load_kb(REPO / "examples" / "kb")
        tokens = load_tokens("all-MiniLM-L6-v2") if args.unit == "tokens" else None
        settings = [ChunkSettings(size=s, overlap=o, unit=args.unit) for s, o in itertools.product(sizes, overlaps)]
        distinct = {c.text for st in settings for c in chunk_kb(kb, st, tokens=tokens)}
        distinct |= {c.text for c in chunk_kb(kb, ChunkSettings())}  # the suite's own settings
        warm_s, warm_err = timed(["sweep", *config, *axes, "--store", str(root / "store"),
                                  "--out", str(root / "again.json")], cwd=root)
        evals_s = 0.0
        for number, point in enumerate(sweep["points"]):
            flags = {"chunking.size": "--chunk-size", "chunking.overlap": "--chunk-overlap", "retriever": "--retriever",
                     "chunking.unit": "--chunk-unit"}
            pairs = [(flags[k], str(v)) for k, v in point["settings"].items()]
            seconds, _err = timed(["eval", *config, *[x for pair in pairs for x in pair], "--store",
                                   str(root / "evals"), "--out", str(root / f"eval{number}.json")], cwd=root)
            evals_s += seconds
        shard_s = []
        for i in (1, 2):
            seconds, _err = timed(["sweep", *config, *axes, "--shard", f"{i}/2", "--store", str(root / f"shard{i}"),
                                   "--out", str(root / f"part{i}.json")], cwd=root)
            shard_s.append(round(seconds, 1))
        timed(["sweep", "merge", str(root / "part1.json"), str(root / "part2.json"), "--out",
               str(root / "merged.json")], cwd=root)
        merged = json.loads((root / "merged.json").read_text())
        out.update({
            "points": len(sweep["points"]),
            "sweep_cold_s": round(cold_s, 1), "sweep_rerun_s": round(warm_s, 1), "separate_evals_s": round(evals_s, 1),
            "ratio_cold_to_evals": round(cold_s / evals_s, 2),
            "texts_embedded_cold": sum(embedded(cold_err)), "distinct_chunk_texts": len(distinct),
            "texts_embedded_rerun": sum(embedded(warm_err)),
            "knee": sweep["knee"],
            "chunks_cut": {json.dumps(p["settings"]): p["truncated"]["chunks"] for p in sweep["points"]
                           if p.get("truncated")},
            "verdict": sweep["verdict"], "best_on_selection": sweep["selection"]["best"],
            "shards_s": shard_s,
            "shards_merged_identical": dumps_json(without_timings(merged)) == dumps_json(without_timings(sweep)),
        })
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
