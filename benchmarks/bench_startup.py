"""Start-up and whole-process time of the commands users wait on.

Each command runs as a fresh process (``python -m retrieval_gate …``), ``--repeat`` times; the
median wall time is printed beside the floor (``python -c pass`` in the same interpreter) and, for
``score``, beside a whole ``pytrec_eval`` process on the same input (10,000 cases × 100 ranked ids,
k = 1,3,5,10).

    PYTHONPATH=src python benchmarks/bench_startup.py [--repeat 7] [--src OTHER/src]

``--src`` points at another checkout's ``src`` (e.g. the code before this change) to measure it
the same way, side by side. The machine is shared: read medians, not single runs.

Bytecode: every command is measured as installed by pip, with compiled bytecode. The processes
run with ``PYTHONPYCACHEPREFIX`` set to a temporary folder (so no checkout gets ``__pycache__``
folders) and without ``PYTHONDONTWRITEBYTECODE``, and each command runs once untimed first. An
editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (set on this project's machines) compiles
every module of the package from source on every run: 0.1–0.15 s more per command.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PYTREC_SCRIPT = """
import sys, pytrec_eval
qrel, run = {}, {}
for line in open(sys.argv[1]):
    q, _, d, r = line.split()
    qrel.setdefault(q, {})[d] = int(r)
for line in open(sys.argv[2]):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
measures = {"recall_1,3,5,10", "ndcg_cut_1,3,5,10", "P_1,3,5,10", "map_cut_1,3,5,10", "recip_rank"}
out = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
import json
with open(sys.argv[3], "w") as fh:
    json.dump(out, fh)
"""


def make_inputs(folder: Path, *, n_cases: int = 10_000, depth: int = 100, seed: int = 7) -> dict[str, Path]:
    """A KB-free scoring input: cases.jsonl (1–3 gold docs each), the same as TREC qrels, and a
    TREC run of ``depth`` ranked docs per case from a pool of 50,000 docs."""
    rng = random.Random(seed)
    cases, qrels, run = [], [], []
    for i in range(n_cases):
        qid = f"q{i}"
        docs = rng.sample(range(50_000), depth + 3)
        gold = docs[: rng.randint(1, 3)]
        ranked = docs[3:]
        if rng.random() < 0.6:  # most cases find a gold doc somewhere in the list
            ranked[rng.randrange(depth)] = gold[0]
        cases.append(json.dumps({"id": qid, "query": f"question {i}", "gold": [f"d{g}" for g in gold]}))
        qrels.extend(f"{qid} 0 d{g} 1" for g in gold)
        run.extend(f"{qid} Q0 d{d} {r + 1} {depth - r:.4f} bench" for r, d in enumerate(ranked))
    paths = {"cases": folder / "cases.jsonl", "qrels": folder / "qrels.txt", "run": folder / "run.trec"}
    paths["cases"].write_text("\n".join(cases) + "\n")
    paths["qrels"].write_text("\n".join(qrels) + "\n")
    paths["run"].write_text("\n".join(run) + "\n")
    return paths


def timed(argv: list[str], *, env: dict[str, str], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of each run of ``argv`` (after one untimed run that
    compiles and caches the bytecode)."""
    subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    times, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return times, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--src", action="append", default=[], help="another checkout's src to measure too")
    parser.add_argument("--no-score", action="store_true", help="skip the 10k × 100 score comparison")
    args = parser.parse_args()
    sources = [str(ROOT / "src"), *args.src]
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs = make_inputs(folder) if not args.no_score else {}
        commands: dict[str, list[str]] = {
            "python -c pass (floor)": [py, "-c", "pass"],
            "retrieval-gate --help": [py, "-m", "retrieval_gate", "--help"],
            "retrieval-gate validate (example suite)": [py, "-m", "retrieval_gate", "validate", "--kb", "examples/kb",
                                                         "--cases", "examples/cases.jsonl"],
        }
        if inputs:
            commands["retrieval-gate score 10k × 100, k=1,3,5,10"] = [
                py, "-m", "retrieval_gate", "score", "--run", str(inputs["run"]), "--cases", str(inputs["cases"]),
                "--k", "1,3,5,10", "--out", str(folder / "results.json")]
            script = folder / "pytrec.py"
            script.write_text(PYTREC_SCRIPT)
            commands["pytrec_eval process, same input"] = [py, str(script), str(inputs["qrels"]), str(inputs["run"]),
                                                          str(folder / "pytrec.json")]
        print(f"median of {args.repeat} whole processes: wall s [min wall], CPU s (user + system)")
        for number, src in enumerate(sources):
            env = {**os.environ, "PYTHONPATH": src, "PYTHONPYCACHEPREFIX": str(folder / f"pycache-{number}")}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            print(f"\nsrc = {src}")
            medians, cpu = {}, {}
            for name, argv in commands.items():
                times, cpus = timed(argv, env=env, repeat=args.repeat)
                medians[name], cpu[name] = statistics.median(times), statistics.median(cpus)
                print(f"  {name:<48} {medians[name]:6.3f}  [{min(times):.3f}]  CPU {cpu[name]:6.3f}")
            if inputs:
                ours, peer = "retrieval-gate score 10k × 100, k=1,3,5,10", "pytrec_eval process, same input"
                print(f"  score / pytrec_eval process: {medians[ours] / medians[peer]:.2f}× wall, "
                      f"{cpu[ours] / cpu[peer]:.2f}× CPU")


if __name__ == "__main__":
    main()
