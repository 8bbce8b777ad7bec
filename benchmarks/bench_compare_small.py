"""``compare`` on a small suite as a whole process, beside ``validate`` and the floor.

41 single-gold cases (the size of a first help-centre suite), a baseline that misses 6 of them and
a run that loses 5 more (the gate's limit: it fails at p = 1/32); each command a fresh process
(``python -m retrieval_gate …``), ``--repeat`` times after one untimed run, with compiled bytecode
(``PYTHONPYCACHEPREFIX`` in a temporary folder, as ``benchmarks/bench_startup.py``). Printed: the
median and the minimum wall time, and CPU time (user + system). The machine is shared: read the
CPU time and the minimum, not single runs.

    PYTHONPATH=src python benchmarks/bench_compare_small.py [--repeat 9] [--src OTHER/src]

``--src`` measures another checkout's ``src`` the same way (e.g. the code before a change).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_startup import ROOT, timed

N_CASES = 41
FILLER = [f"other{j}" for j in range(10)]


def make_suite(folder: Path, *, py: str, env: dict[str, str]) -> None:
    """cases.jsonl, base / current runs, scored, and the baseline (by the CLI under test)."""
    import subprocess

    cases = [{"id": f"q{i:02d}", "query": f"question {i}?", "gold": [f"doc{i}"]} for i in range(N_CASES)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    misses = {"base": set(range(35, 41)), "current": set(range(35, 41)) | set(range(5))}
    for name, missing in misses.items():
        lines = [json.dumps({"id": f"q{i:02d}", "retrieved": FILLER if i in missing else
                             [FILLER[0], f"doc{i}", *FILLER[1:]]}) for i in range(N_CASES)]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        subprocess.run([py, "-m", "retrieval_gate", "score", "--run", str(folder / f"{name}.jsonl"), "--cases",
                        str(folder / "cases.jsonl"), "--out", str(folder / f"{name}.json")], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run([py, "-m", "retrieval_gate", "baseline", "update", "--results", str(folder / "base.json"),
                    "--baseline", str(folder / "baseline.json")], env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--src", action="append", default=[], help="another checkout's src to measure too")
    args = parser.parse_args()
    py = sys.executable
    print(f"median [min] of {args.repeat} whole processes, wall s; CPU s (user + system, median)")
    with tempfile.TemporaryDirectory() as tmp:
        for number, src in enumerate([str(ROOT / "src"), *args.src]):
            folder = Path(tmp) / f"suite-{number}"
            folder.mkdir()
            env = {**os.environ, "PYTHONPATH": src, "PYTHONPYCACHEPREFIX": str(Path(tmp) / f"pycache-{number}")}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            make_suite(folder, py=py, env=env)
            commands = {
                "python -c pass (floor)": [py, "-c", "pass"],
                "retrieval-gate validate (example suite)": [py, "-m", "retrieval_gate", "validate", "--kb",
                                                             "examples/kb", "--cases", "examples/cases.jsonl"],
                f"retrieval-gate compare, {N_CASES} cases, 5 lost": [
                    py, "-m", "retrieval_gate", "compare", "--results", str(folder / "current.json"), "--baseline",
                    str(folder / "baseline.json"), "--out", str(folder / "comparison.json")],
            }
            print(f"\nsrc = {src}")
            for name, argv in commands.items():
                times, cpus = timed(argv, env=env, repeat=args.repeat)
                print(f"  {name:<44} {statistics.median(times):6.3f} [{min(times):.3f}]  "
                      f"CPU {statistics.median(cpus):6.3f}")


if __name__ == "__main__":
    main()
