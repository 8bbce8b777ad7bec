"""The default (torch-free) image against the host CLI on the PR path, side by side in one run,
and the image's size and bare start-up (the figures in docs/action.md and docs/performance.md).

The PR path: a warm-store ``retrieval-gate eval`` of the example suite after a one-card edit (a
new line appended to the same en-US card, so exactly one chunk is embedded again), as
benchmarks/bench_pr_path.py times it on the host. Here, in turn each round:

- ``host``: ``python -m retrieval_gate eval`` on the host (``embed_backend: auto``: ONNX Runtime on
  the cached, checked export), a fresh process;
- ``container``: the same command in the default image, ``docker run --rm`` with the suite folder
  mounted as the runner mounts the workspace (the store under it: what actions/cache restores),
  a fresh empty HOME each time (the runner's /github/home), no network; the container's start,
  its exit and its removal included;
- ``start``: ``docker run --rm IMAGE true`` (the bare start of a container of the image).

Each variant has its own copy of the suite and its own store, warmed once (cold run, then one
edit) before the timed rounds. Reported: median / min / max wall seconds, the per-round ratio
container / host (median), and, after the rounds, the rankings: the container's last results
against the torch backend's on the host for the same edited suite (``--embed-backend torch``),
case for case. Also the image's size (``docker image inspect``) and its compressed size
(``docker save | gzip -6``: what a registry stores and a runner pulls) for the default image
and, with ``--full TAG``, the full one.

    python benchmarks/bench_image_pr_path.py --image retrieval-gate:slim [--full retrieval-gate:full] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_image import compressed_size  # noqa: E402
from benchmarks.bench_pr_path import edit_one_card  # noqa: E402

EVAL = ["eval", "--kb", "kb", "--cases", "cases.jsonl", "--out", "r.json"]


def host_cmd(backend: str = "auto") -> list[str]:
    return [sys.executable, "-m", "retrieval_gate", *EVAL, "--embed-backend", backend]


def container_cmd(image: str, suite: Path, home: Path) -> list[str]:
    return ["docker", "run", "--rm", "--network", "none", "-v", f"{suite}:/github/workspace",
            "-v", f"{home}:/github/home", "-e", "HOME=/github/home", "--workdir", "/github/workspace",
            "--entrypoint", "retrieval-gate", image, *EVAL]


def timed(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-800:]}")
    return wall


def rankings(path: Path) -> dict[str, list[str]]:
    return {c["id"]: c["retrieved"] for c in json.loads(path.read_text(encoding="utf-8"))["cases"]}


def sizes(tag: str) -> dict[str, float]:
    size = int(subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", tag], capture_output=True,
                              text=True, check=True).stdout)
    return {"size_gb": round(size / 1e9, 3), "compressed_gb": round(compressed_size(tag) / 1e9, 3)}


def summary(walls: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(walls), 3), "min": round(min(walls), 3), "max": round(max(walls), 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--image", default="retrieval-gate:slim")
    parser.add_argument("--full", default=None, help="the full variant's tag: its size too")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-image-pr-path-"))
    os.chmod(work, 0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    suites = {}
    for name in ("host", "container", "torch"):
        suite = work / name
        shutil.copytree(REPO / "examples" / "kb", suite / "kb")
        shutil.copy(REPO / "examples" / "cases.jsonl", suite / "cases.jsonl")
        suites[name] = suite
    homes = iter(range(10_000))

    def fresh_home() -> Path:
        home = work / "homes" / str(next(homes))
        home.mkdir(parents=True)
        return home

    def run(name: str) -> float:
        if name == "host":
            return timed(host_cmd(), cwd=suites["host"], env=env)
        if name == "container":
            return timed(container_cmd(args.image, suites["container"], fresh_home()), cwd=work, env=env)
        return timed(["docker", "run", "--rm", "--network", "none", "--entrypoint", "true", args.image],
                     cwd=work, env=env)

    for name in ("host", "container"):  # the store, made once; then one edit, untimed
        run(name)
        edit_one_card(suites[name], 0)
        run(name)
    run("start")
    names = ["host", "container", "start"]
    walls: dict[str, list[float]] = {n: [] for n in names}
    for round_ in range(1, args.rounds + 1):
        for name in names:
            if name != "start":
                edit_one_card(suites[name], round_)
            walls[name].append(run(name))
    # The torch backend on the host, on the suite as the container last saw it (the same edits).
    shutil.rmtree(suites["torch"] / "kb")
    shutil.copytree(suites["container"] / "kb", suites["torch"] / "kb")
    timed(host_cmd("torch"), cwd=suites["torch"], env=env)
    container, torch = rankings(suites["container"] / "r.json"), rankings(suites["torch"] / "r.json")
    differing = sorted(c for c in torch if container.get(c) != torch[c])
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[:3]
    out = {
        "rounds": args.rounds, "cores": os.cpu_count(), "load_after": load, "image": args.image,
        "wall_s": {n: summary(w) for n, w in walls.items()},
        "container_over_host_median": round(statistics.median(
            c / h for c, h in zip(walls["container"], walls["host"], strict=True)), 2),
        "rankings_equal_torch": not differing, "cases": len(torch), "cases_differing": differing,
        "default_image": sizes(args.image),
        **({"full_image": sizes(args.full)} if args.full else {}),
    }
    print(json.dumps(out, indent=2, sort_keys=True))
    shutil.rmtree(work, ignore_errors=True)
    if differing:
        raise SystemExit(f"the container's rankings differ from the torch backend's on {differing}")


if __name__ == "__main__":
    main()
