"""From an empty repository to a first local green ``compare``, with ``init``: time and files.

A new folder, ``git init``, the shipped example's KB (48 Markdown cards) and golden set (62 cases)
copied in — then the user's whole set-up: ``retrieval-gate init`` (one command: detection,
validation, config, workflows, .gitignore, first eval, baseline + audit) and ``retrieval-gate
compare --results out/results.json`` (green: exit 0). Reports each command's wall time, the files
init wrote (and that the user wrote by hand: none), the lines of workflow YAML in the file a user
would otherwise write (non-blank, non-comment), and ``git status`` after the commit commands.

Usage: python benchmarks/bench_init.py   (≈30 s on 2 cores; a cold store: everything is embedded)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIN = "owner/retrieval-gate@" + "0" * 40


def run(args: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
        shutil.copytree(REPO / "examples" / "kb", repo / "kb")
        shutil.copy(REPO / "examples" / "cases.jsonl", repo / "cases.jsonl")
        before = {p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
        rg = [sys.executable, "-m", "retrieval_gate"]
        t_init, init = run([*rg, "init", "--action-ref", PIN], repo)
        assert init.returncode == 0, init.stderr
        t_compare, compare = run([*rg, "compare", "--results", "out/results.json"], repo)
        assert compare.returncode == 0, compare.stderr
        ignored = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True,
                                 text=True, check=True).stdout
        after = {p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
        tracked = sorted(p.relative_to(repo).as_posix() for p in after - before
                         if not p.relative_to(repo).as_posix().startswith((".retrieval-gate/", "out/")))
        workflow = (repo / ".github" / "workflows" / "retrieval.yml").read_text(encoding="utf-8")
        yaml_lines = sum(1 for line in workflow.splitlines() if line.strip() and not line.lstrip().startswith("#"))
        print(json.dumps({
            "commands": 2, "init_s": round(t_init, 1), "compare_s": round(t_compare, 1),
            "total_s": round(t_init + t_compare, 1), "files_written_by_init": tracked,
            "files_written_by_hand": 0, "caller_workflow_yaml_lines": yaml_lines,
            "ignored_by_git": sorted(line[3:] for line in ignored.splitlines() if line.startswith("!!")),
            "compare_verdict": compare.stdout.strip().splitlines()[-1],
        }, indent=2))


if __name__ == "__main__":
    main()
