"""The PR path: a warm-store ``eval`` of the example suite after a one-card edit, with the default
``embed_backend: auto`` (ONNX Runtime fp32 on the cached, checked export) and with
``--embed-backend torch``, side by side with the floor ``python -c "import onnxruntime, tokenizers"``.

Each round edits one card (a new line appended to the same en-US card, so exactly one chunk is
embedded again) and runs ``retrieval-gate eval`` as a fresh process, in turn: auto, torch,
floor, auto, torch, floor, … (interleaved, so the machine's drift touches all three alike). Per
command: median / min / max wall seconds, median CPU seconds (the children's user + system), and
the median of the per-round ratio auto / floor and torch / auto. Each variant has its own copy
of the suite and its own store (a backend's vectors live in their own store), warmed once first.

The modules each variant loaded are checked once, after the rounds, with ``-X importtime``:
``torch`` must not be among auto's.

    PYTHONPATH=src python benchmarks/bench_pr_path.py [--rounds 9] [--work DIR] [--src OTHER/src]

``--src OTHER/src`` adds a fourth command in the same rounds: ``auto`` run by another checkout's
code (the figure before a change), with its own copy of the suite and store, and the per-round
ratio this / that.

Processes run with ``PYTHONPYCACHEPREFIX`` set to a temporary folder (bytecode compiled once, as
an installed package has it), each command run once untimed first. The machine is shared: quote
medians and the floor measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
FLOOR = [sys.executable, "-c", "import onnxruntime, tokenizers"]


def eval_cmd(backend: str) -> list[str]:
    return [sys.executable, "-m", "retrieval_gate", "eval", "--kb", "kb", "--cases", "cases.jsonl", "--out", "r.json",
            "--embed-backend", backend]


def timed(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-800:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def edit_one_card(suite: Path, round_: int) -> None:
    card = sorted((suite / "kb" / "en-US").glob("*.md"))[0]
    with card.open("a", encoding="utf-8") as handle:
        handle.write(f"\nEdited in round {round_}: refunds also reach prepaid cards.\n")


def loaded(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> list[str]:
    """The model runtimes an edit-path run of ``cmd`` imports (one more card edit first)."""
    edit_one_card(cwd, -1)
    done = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=cwd, env=env, capture_output=True, text=True)
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return sorted(n for n in ("torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers")
                  if n in names)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--src", type=Path, default=None, help="another checkout's src: its auto eval, paired")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-pr-path-"))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    envs = {"auto": env, "torch": env}
    backends = {"auto": "auto", "torch": "torch"}
    if args.src is not None:
        envs["before"] = {**env, "PYTHONPATH": str(args.src.resolve()),
                          "PYTHONPYCACHEPREFIX": str(work / "pycache-before")}
        backends["before"] = "auto"
    suites = {}
    for name, backend in backends.items():
        suite = work / name
        shutil.rmtree(suite, ignore_errors=True)
        shutil.copytree(EXAMPLES / "kb", suite / "kb")
        shutil.copy(EXAMPLES / "cases.jsonl", suite / "cases.jsonl")
        timed(eval_cmd(backend), cwd=suite, env=envs[name])  # the store, the cache and (auto) the export, made once
        edit_one_card(suite, 0)
        timed(eval_cmd(backend), cwd=suite, env=envs[name])  # untimed warm-up of the edit path
        suites[name] = suite
    timed(FLOOR, cwd=work, env=env)
    names = [*backends, "floor"]
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for round_ in range(1, args.rounds + 1):
        for name in names:
            if name == "floor":
                wall, cpu = timed(FLOOR, cwd=work, env=env)
            else:
                edit_one_card(suites[name], round_)
                wall, cpu = timed(eval_cmd(backends[name]), cwd=suites[name], env=envs[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    embedded = {name: json.loads((suites[name] / "r.json").read_text())["extras"]["embedding"]["passages_embedded"]
                for name in suites}
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[:3]
    out = {
        "rounds": args.rounds, "cores": os.cpu_count(), "load_after": load, "passages_embedded": embedded,
        "wall_s": {n: {"median": round(statistics.median(w), 3), "min": round(min(w), 3), "max": round(max(w), 3)}
                   for n, w in walls.items()},
        "cpu_s_median": {n: round(statistics.median(c), 3) for n, c in cpus.items()},
        "auto_over_floor_median": round(statistics.median(a / f for a, f in zip(walls["auto"], walls["floor"],
                                                                               strict=True)), 2),
        "torch_over_auto_median": round(statistics.median(t / a for t, a in zip(walls["torch"], walls["auto"],
                                                                               strict=True)), 2),
        **({"auto_over_before_median": round(statistics.median(a / b for a, b in zip(
            walls["auto"], walls["before"], strict=True)), 2)} if "before" in walls else {}),
        "modules": {"auto": loaded(eval_cmd("auto"), cwd=suites["auto"], env=env),
                    "torch": loaded(eval_cmd("torch"), cwd=suites["torch"], env=env)},
    }
    print(json.dumps(out, indent=2, sort_keys=True))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
