"""``cases draft`` on a large synthetic query log, with the default ``embed_backend: auto`` (ONNX
Runtime fp32) and with ``--embed-backend torch``, each in its own process: wall time, peak
memory, and whether the two draw the same set (same pre-sample, same near-duplicate collapse,
same intents, same drafted queries with the same intent labels).

The log is ``bench_golden_draft.synthetic_log`` (SciFact claims with seeded variations, Zipf
traffic over ``--distinct`` queries), drafted over the example KB with ``--size 400``, as
``bench_golden_draft.py log1m`` does. The embedding cost is bounded by the pre-sample
(``golden.draw.MAX_EMBEDDED`` = 20,000 distinct queries), which a 100,000-line log over 200,000
distinct queries already fills: what a 1,000,000-line log adds is the streaming part (reading,
cleaning, exact deduplication, pre-sample), timed here alone (``prep_s``) so the 1,000,000-line
figure can be extrapolated from a 100,000-line run when a full one is too slow for the machine.

    PYTHONPATH=src python benchmarks/bench_draft_backends.py WORKDIR [--lines 100000] [--distinct 200000]
        [--backends auto,torch]

Each process starts with an empty store and embedding cache (its own folder), so every query of
the pre-sample is embedded; the ONNX export is made beforehand, untimed (it is made once per
machine). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_golden_draft import EXAMPLE_KB, synthetic_log


def child(backend: str, log: Path, work: Path) -> dict:
    from retrieval_gate.environment import onnx_export_root
    from retrieval_gate.golden.cases_draft import DraftOptions, draft_cases
    from retrieval_gate.golden.draw import presample
    from retrieval_gate.golden.log_clean import RawQuery, clean_log
    from retrieval_gate.golden.log_reader import iter_log
    from retrieval_gate.overrides import StoreOverrides, SuiteOverrides
    from retrieval_gate.settings import ConfigFile, resolve_suite

    began = time.perf_counter()
    rows = (RawQuery(line=n, text=t, count=c, fields=f) for n, t, c, f in iter_log(log, problems=[]))
    distinct, _ = clean_log(rows)
    presample(distinct, seed=0)
    prep_s = time.perf_counter() - began
    del distinct, rows
    exports = onnx_export_root(dict(os.environ))
    config = resolve_suite(ConfigFile(), suite="bench", config_path=None, embed_exports=exports,
                           overrides=SuiteOverrides(kb=str(EXAMPLE_KB), embed_backend=backend,
                                                    store=StoreOverrides(mode="persistent", path=str(work / "store"))))
    began, cpu = time.perf_counter(), time.process_time()
    result = draft_cases(suite_config=config, suite="bench", options=DraftOptions(log=log, size=400, depth=10))
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    drawn = [[e.query, e.intent] for e in result.entries]
    return {"backend": backend, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "prep_s": round(prep_s, 1),
            "distinct": result.distinct,
            "embedded": result.presampled, "near_duplicates": result.near, "intents": len(result.intents),
            "intent_traffic": sorted(i.traffic for i in result.intents), "drafted": len(result.entries),
            "drawn_sha256": hashlib.sha256(json.dumps(drawn).encode()).hexdigest(), "drawn": drawn,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}



def main() -> None:
    if sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--distinct", type=int, default=200_000)
    parser.add_argument("--backends", default="auto,torch")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / f"log_{args.lines}_{args.distinct}.txt"
    if not log.is_file():
        synthetic_log(log, lines=args.lines, distinct=args.distinct, seed=1)
    from retrieval_gate.embed.onnx import ensure_exported
    from retrieval_gate.embed.resolve import resolve_model
    from retrieval_gate.environment import onnx_export_root

    ref = resolve_model("all-MiniLM-L6-v2")
    ensure_exported(ref, folder=onnx_export_root(dict(os.environ)) / ref.sha256, quantized=False)
    runs = []
    for backend in args.backends.split(","):
        work = args.work / f"run-{backend}-{len(runs)}"
        subprocess.run(["rm", "-rf", str(work)], check=True)
        work.mkdir()
        with open("/proc/loadavg") as handle:
            load = handle.read().split()[0]
        done = subprocess.run([sys.executable, __file__, "child", backend, str(log), str(work)], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "src")})
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        run = json.loads(done.stdout.strip().splitlines()[-1])
        (work / "run.json").write_text(json.dumps(run), encoding="utf-8")
        with open("/proc/loadavg") as handle:
            run["load_before_after"] = [load, handle.read().split()[0]]
        runs.append(run)
    first = runs[0]
    same = {r["backend"]: all(r[k] == first[k] for k in ("embedded", "near_duplicates", "intent_traffic",
                                                              "drawn_sha256")) for r in runs[1:]}
    drawn_overlap = {r["backend"]: len({q for q, _ in r["drawn"]} & {q for q, _ in first["drawn"]}) for r in runs[1:]}
    for r in runs:
        r.pop("drawn")
    print(json.dumps({"lines": args.lines, "distinct_made": args.distinct, "runs": runs,
                      f"same_draw_as_{first['backend']}": same, "drawn_queries_in_common": drawn_overlap},
                     indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
