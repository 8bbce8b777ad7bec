"""The PR path: a warm-store ``eval`` of the example suite after a one-card edit, with the default
``embed_backend: auto`` (ONNX Runtime fp32 on the cached, checked export) and with
``--embed-backend torch``, side by side with the floor ``python -c "import onnxruntime, tokenizers"``
and the least a one-card edit needs whatever the tool (``LEAST``: those imports, a session on the
model's ONNX graph, one passage tokenized, embedded and pooled).

Each round edits one card (a new line appended to the same en-US card, so exactly one chunk is
embedded again) and runs ``retrieval-gate eval`` as a fresh process, in turn: auto, torch,
least, floor, auto, torch, least, floor, … (interleaved, so the machine's drift touches them all alike). Per
command: median / min / max wall seconds, median CPU seconds (the children's user + system), and
the median of the per-round ratio auto / floor and torch / auto. Each variant has its own copy
of the suite and its own store (a backend's vectors live in their own store), warmed once first.

The modules each variant loaded are checked once, after the rounds, with ``-X importtime``:
``torch`` and ``chromadb`` (a warm store is opened through chromadb's Rust core) must not be
among auto's.

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
# The least a one-card edit needs, whatever the tool: the runtime's imports, a session on the
# model's ONNX graph, its tokenizer, one passage through both, mean pooling and the norm.
LEAST = """
import sys
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
tokenizer = Tokenizer.from_file(sys.argv[2])
tokenizer.enable_truncation(256)
enc = tokenizer.encode("Deleting your account removes every invoice and card on file. " * 8)
ids, mask = np.array([enc.ids], dtype=np.int64), np.array([enc.attention_mask], dtype=np.int64)
given = {"input_ids": ids, "attention_mask": mask}
feed = {i.name: given.get(i.name, np.zeros_like(ids)) for i in session.get_inputs()}
out = session.run(None, feed)[0]
vector = (out * mask[..., None]).sum(axis=1) / mask.sum()
assert vector.shape == (1, 384) and np.isfinite(vector / np.linalg.norm(vector)).all()
"""


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
    return sorted(n for n in ("torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers",
                              "chromadb") if n in names)


def least_cmd() -> list[str]:
    """``LEAST`` on the bundled model's checked export (made by the auto suite's first run)."""
    sys.path.insert(0, str(REPO / "src"))
    from retrieval_gate.embed.resolve import resolve_model
    from retrieval_gate.environment import onnx_export_root

    ref = resolve_model("all-MiniLM-L6-v2")
    graph = onnx_export_root(dict(os.environ)) / ref.sha256 / "model.onnx"
    return [sys.executable, "-c", LEAST, str(graph), str(ref.path / "tokenizer.json")]


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
    least = least_cmd()
    timed(FLOOR, cwd=work, env=env)
    timed(least, cwd=work, env=env)
    names = [*backends, "least", "floor"]
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for round_ in range(1, args.rounds + 1):
        for name in names:
            if name in ("floor", "least"):
                wall, cpu = timed(FLOOR if name == "floor" else least, cwd=work, env=env)
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
        "least_over_floor_median": round(statistics.median(a / f for a, f in zip(walls["least"], walls["floor"],
                                                                                 strict=True)), 2),
        "auto_over_least_median": round(statistics.median(a / f for a, f in zip(walls["auto"], walls["least"],
                                                                                strict=True)), 2),
        "torch_over_auto_median": round(statistics.median(t / a for t, a in zip(walls["torch"], walls["auto"],
                                                                               strict=True)), 2),
        **({"auto_over_before_median": round(statistics.median(a / b for a, b in zip(
            walls["auto"], walls["before"], strict=True)), 2)} if "before" in walls else {}),
        "modules": {"auto": loaded(eval_cmd("auto"), cwd=suites["auto"], env=env),
                    "torch": loaded(eval_cmd("torch"), cwd=suites["torch"], env=env)},
    }
    print(json.dumps(out, indent=2, sort_keys=True))
    if {"torch", "chromadb"} & set(out["modules"]["auto"]):
        raise SystemExit(f"the auto PR path imported {out['modules']['auto']}: never torch, never chromadb")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
