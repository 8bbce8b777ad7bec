"""Peak memory of the commands that read one large JSON line, and the speed of the depth check.

A 20 MB cases line whose query holds brackets (Markdown links, code), read by ``validate`` and
``label apply``, and two labels files holding a 20 MB line each, read by ``label agree``. Each
command runs as a fresh process (``python -m retrieval_gate …``); its peak resident set is the
child's ``ru_maxrss`` (``resource.getrusage(RUSAGE_CHILDREN)`` of a wrapper that runs only it).
The goal: peak ≤ 3 × the input's size + 200 MB.

Then the depth check alone (``load.boundary.json_depth_exceeds``) on three 20 MB texts — one long
string, a baseline-like text of many short strings and arrays, and bracket pairs only — beside
the regex-and-replace check it replaced (kept below as ``old_depth_exceeds``), each in a child
process: CPU seconds of one call, then the peak of what a second call allocates (``tracemalloc``,
which sees the regex engine's own allocations).

    PYTHONPATH=src python benchmarks/bench_input_memory.py [--mb 20] [--src OTHER/src]

``--src`` points at another checkout's ``src`` (e.g. the code before this change) to measure its
commands the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs argv[1:] as a child and prints its exit status and peak RSS in kB (Linux: ru_maxrss is kB).
WRAPPER = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

_OLD_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OLD_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def old_depth_exceeds(text: str, limit: int = 64) -> bool:
    """The depth check before it streamed (regex removal of strings, then rounds of pair removal)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _OLD_NOT_BRACKET.sub("", _OLD_STRING.sub("", text))
    for _ in range(limit):
        if not brackets:
            return False
        shorter = brackets.replace("[]", "").replace("{}", "")
        if shorter == brackets:
            return False
        brackets = shorter
    return bool(brackets) and ("[]" in brackets or "{}" in brackets)


DEPTH_CHILD = """
import sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
from bench_input_memory import old_depth_exceeds, depth_text
from retrieval_gate.load.boundary import json_depth_exceeds
text = depth_text(sys.argv[3], int(sys.argv[4]))
check = old_depth_exceeds if sys.argv[2] == "old" else json_depth_exceeds
start = time.process_time()
answer = check(text)
cpu = time.process_time() - start
tracemalloc.start()
check(text)
print(answer, cpu, tracemalloc.get_traced_memory()[1])
"""


def long_query(size: int) -> str:
    return ("See [the refund page](https://example.com/r) or {card} " * (size // 55 + 1))[:size]


def depth_text(kind: str, size: int) -> str:
    if kind == "long string":
        return json.dumps({"id": "c1", "query": long_query(size), "gold": ["a"]})
    if kind == "many strings":  # a baseline's shape: cases → a ranking of [id, score] pairs
        row = '["card-0001", 0.5], '
        rows = "[" + row * 10 + "[\"card-0002\", 0.25]]"
        return '{"cases": {' + ", ".join(f'"c{i}": {{"ranking": {rows}}}' for i in range(size // 240)) + "}}"
    return "[" + "[[]], " * (size // 6) + "[]]"  # bracket pairs only


def files(folder: Path, size: int, src: Path) -> dict[str, Path]:
    sys.path.insert(0, str(src))
    from retrieval_gate.load.kb import load_kb
    from retrieval_gate.score.kb_manifest import kb_manifest

    kb = folder / "kb.jsonl"
    kb.write_text(json.dumps({"id": "a", "text": "Refunds take 5-10 days."}) + "\n"
                  + json.dumps({"id": "b", "text": "Bank transfers settle in 2 days."}) + "\n")
    sha = kb_manifest(load_kb(kb).cards)["b"].sha
    cases = folder / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "query": long_query(size), "gold": ["a"]}) + "\n"
                     + json.dumps({"id": "c2", "query": "refund [card]", "gold": ["a"]}) + "\n")
    labels = folder / "labels.jsonl"
    labels.write_text(json.dumps({"case": "c2", "card": "b", "grade": 1, "sha": sha}) + "\n")
    agree = []
    for name, grade in (("one", 1), ("two", 0)):
        path = folder / f"labels-{name}.jsonl"
        path.write_text(json.dumps({"case": "c1", "card": "b", "grade": grade, "sha": sha,
                                    "labeller": long_query(size)}) + "\n")
        agree.append(path)
    return {"kb": kb, "cases": cases, "labels": labels, "one": agree[0], "two": agree[1]}


def peak(argv: list[str], src: Path, cwd: Path) -> tuple[int, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", WRAPPER, *argv], env=env, cwd=cwd, capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[0]), int(out[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="size of the large line, in MB (10^6 bytes)")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the package source to measure")
    parser.add_argument("--skip-depth", action="store_true", help="only the commands")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    src = args.src.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / ".git").mkdir()  # label apply writes inside a repository only
        f = files(folder, size, src)
        run = [sys.executable, "-m", "retrieval_gate"]
        commands = {
            "validate": ([*run, "validate", "--kb", str(f["kb"]), "--cases", str(f["cases"])], [f["kb"], f["cases"]]),
            "label apply": ([*run, "label", "apply", str(f["labels"]), "--kb", str(f["kb"]), "--cases",
                             str(f["cases"])], [f["kb"], f["cases"], f["labels"]]),
            "label agree": ([*run, "label", "agree", str(f["one"]), str(f["two"])], [f["one"], f["two"]]),
        }
        print(f"source: {src}")
        print("| command | input MB | exit | peak RSS MB | goal MB (3 × input + 200) |")
        print("|---|--:|--:|--:|--:|")
        for name, (argv, inputs) in commands.items():
            megabytes = sum(p.stat().st_size for p in inputs) / 1024**2
            code, rss = peak(argv, src, folder)
            print(f"| `{name}` | {megabytes:.1f} | {code} | {rss:,.0f} | {3 * megabytes + 200:,.0f} |")
    if args.skip_depth:
        return
    print()
    print("| depth check on | check | answer | CPU s | peak memory it allocates MB (tracemalloc) |")
    print("|---|---|---|--:|--:|")
    for kind in ("long string", "many strings", "brackets only"):
        for which in ("old", "new"):
            env = {**os.environ, "PYTHONPATH": str(src)}
            out = subprocess.run([sys.executable, "-c", DEPTH_CHILD, str(Path(__file__).parent), which, kind,
                                  str(size)], env=env, capture_output=True, text=True, check=True).stdout.split()
            answer, cpu, traced = out[0], float(out[1]), int(out[2])
            print(f"| {kind} ({size / 1e6:.0f} MB) | {which} | {answer} | {cpu:.2f} | {traced / 1024**2:,.1f} |")


if __name__ == "__main__":
    main()
