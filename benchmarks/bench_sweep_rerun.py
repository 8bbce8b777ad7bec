"""An unchanged sweep, run again: what a rerun costs on Cranfield (BEIR: 1,400 records, 225 queries).

The grid of issue 40: chunk sizes 300, 600, 1200 × dense / BM25 / hybrid (9 points and the
suite's own settings as the reference), one persistent store folder. Measured, each step a
fresh process of this checkout (``python -m retrieval_gate`` with ``src`` first on the path):

1. the sweep, cold (an empty store folder): wall time, CPU time (user + system of the process);
2. the same sweep again, ``--repeat`` times: wall and CPU time, texts embedded (goal: 0), points
   read back from the point cache, and whether its ``sweep.json`` equals the cold run's byte for
   byte without the seconds;
3. once more with the point cache removed (``<store>/sweep-points``; the embedding cache kept):
   every point recomputed from cached vectors — what a rerun cost before the point cache, and
   what a rerun costs after an upgrade of the tool (a new fingerprint).

The machine's load average is printed before and after (the figures are only comparable at a
similar load).

Run: ``python benchmarks/bench_sweep_rerun.py [--dataset /work/shared/datasets/cranfield] [--repeat 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AXES = ["--axis", "chunking.size=300,600,1200", "--axis", "retriever=dense,bm25,hybrid"]


def timed(args: list[str], *, cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the child's user + system) and stderr of one CLI run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", *args], cwd=cwd, capture_output=True, text=True,
                          check=False, env=env)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"retrieval-gate {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path("/work/shared/datasets/cranfield"))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # tests.reference
    from tests.reference import without_timings

    out: dict[str, object] = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                              "load_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "retrieval-gate.yml").write_text(
            f"suites:\n  default:\n    kb: {args.dataset}\n    cases: {args.dataset}\n    k: [1, 3, 5, 10]\n")
        common = ["sweep", *AXES, "--store", str(root / "store")]
        cold_wall, cold_cpu, cold_err = timed([*common, "--out", str(root / "cold.json")], cwd=root)
        cold = json.loads((root / "cold.json").read_text())
        reruns = []
        for i in range(args.repeat):
            wall, cpu, err = timed([*common, "--out", str(root / f"again{i}.json")], cwd=root)
            again = json.loads((root / f"again{i}.json").read_text())
            reruns.append({"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                           "embedded": sum(int(n) for n in re.findall(r"· embedded (\d+), reused", err)),
                           "read_back": len(re.findall(r"read back", err)),
                           "same_sweep_json": json.dumps(without_timings(again), sort_keys=True)
                           == json.dumps(without_timings(cold), sort_keys=True)})
        shutil.rmtree(root / "store" / "sweep-points", ignore_errors=True)
        wall, cpu, err = timed([*common, "--out", str(root / "recomputed.json")], cwd=root)
        again = json.loads((root / "recomputed.json").read_text())
        out["recomputed_from_vectors"] = {
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "embedded": sum(int(n) for n in re.findall(r"· embedded (\d+), reused", err)),
            "same_sweep_json": json.dumps(without_timings(again), sort_keys=True)
            == json.dumps(without_timings(cold), sort_keys=True)}
        out.update({"points": len(cold["points"]), "cold_wall_s": round(cold_wall, 1), "cold_cpu_s": round(cold_cpu, 1),
                    "cold_embedded": sum(int(n) for n in re.findall(r"· embedded (\d+), reused", cold_err)),
                    "reruns": reruns, "warnings": [w["text"] for w in cold.get("warnings", [])],
                    "knee": cold["knee"], "verdict": cold["verdict"]})
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
