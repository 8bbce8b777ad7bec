"""The test tiers a newcomer runs: how many tests each selects and, with ``--time``, how long each
takes as a whole ``pytest`` process (pyproject's addopts: one worker per core).

    python benchmarks/bench_test_tiers.py                  # counts only (pytest --collect-only)
    python benchmarks/bench_test_tiers.py --time fast      # the fast loop, timed
    python benchmarks/bench_test_tiers.py --time fast,full # and the full run without the image tier

Tiers: ``fast`` = ``-m "not slow"``, ``rest`` = ``-m "slow and not image"``, ``image`` = ``-m image``,
``full`` = ``-m "not image"``. Goals on 2 cores (docs/performance.md, "Test tiers"): the fast loop
≤ 3 min, the full run without the image tier ≤ 12 min. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIERS = {"fast": "not slow", "rest": "slow and not image", "image": "image", "full": "not image"}


def _pytest(*args: str, timeout: float) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, "CI": ""})
    return time.monotonic() - started, done.stdout + done.stderr


def count(expr: str) -> int:
    _, out = _pytest("--collect-only", "-n", "0", "-m", expr, timeout=600)
    found = re.search(r"(\d+)(?:/\d+)? tests? collected|(\d+) selected", out)
    listed = [line for line in out.splitlines() if "::" in line]
    return len(listed) if listed else int(next(g for g in found.groups() if g)) if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", default="", help="Comma-separated tiers to time (fast, rest, full).")
    args = parser.parse_args()
    out: dict[str, object] = {"load_before": round(os.getloadavg()[0], 2),
                              "counts": {name: count(expr) for name, expr in TIERS.items()}}
    timed = {}
    for name in filter(None, args.time.split(",")):
        wall, text = _pytest("-m", TIERS[name], timeout=3600)
        timed[name] = {"wall_s": round(wall, 1), "summary": text.strip().splitlines()[-1] if text.strip() else ""}
    out["timed"] = timed
    out["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
