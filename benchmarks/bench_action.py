"""The action's footprint outside a container, measured side by side in one run (the image
itself — size, build, start, runs in the container, act — is measured by bench_image.py).

1. Installed size of the runtime dependency closure of ``retrieval-gate`` (what ``pip install .``
   puts into the image's site-packages; torch here is the same CPU build the Dockerfile installs).
2. Cold start of ``retrieval-gate action`` as the container runs it (a fresh process, mode report,
   the example suite): first run with an empty store (embeds the KB), then a second run reusing
   the persistent store (what ``actions/cache`` on ``.retrieval-gate/`` would give), and the bare
   CLI start (``--help``).

Usage: python benchmarks/bench_action.py   (≈1 min; the examples are copied to a temp folder)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def dist_size(dist: metadata.Distribution) -> int:
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def closure(root: str) -> dict[str, int]:
    """Every distribution ``root`` needs at run time (markers evaluated, no extras), with sizes."""
    seen: dict[str, int] = {}
    todo = [root]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[name] = dist_size(dist)
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def timed(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    began = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - began, proc.returncode, proc.stderr[-500:]


def main() -> None:
    sizes = closure("retrieval-gate")
    total = sum(sizes.values())
    print(f"runtime dependency closure: {len(sizes)} distributions, {total / 1e6:.0f} MB installed")
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {name:32s} {size / 1e6:8.1f} MB")

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "workspace"
        ws.mkdir()
        shutil.copytree(REPO / "examples", ws / "examples")
        shutil.copy(REPO / "retrieval-gate.yml", ws / "retrieval-gate.yml")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
        env.update(HF_HUB_OFFLINE="1", GITHUB_WORKSPACE=str(ws), GITHUB_EVENT_NAME="push",
                   INPUT_MODE="report", INPUT_CONFIG="retrieval-gate.yml", INPUT_SUITE="default",
                   INPUT_BASELINE_DIR="baselines", INPUT_OUT_DIR="out", INPUT_COMMENT="true")
        cli = [sys.executable, "-m", "retrieval_gate"]
        rows = [("CLI start (--help)", *timed([*cli, "--help"], cwd=ws, env=env)),
                ("action, report, empty store", *timed([*cli, "action"], cwd=ws, env=env)),
                ("action, report, warm store", *timed([*cli, "action"], cwd=ws, env=env))]
        for label, seconds, code, err in rows:
            print(f"{label:32s} {seconds:6.1f} s  (exit {code})")
            if code:
                print(err)


if __name__ == "__main__":
    main()
