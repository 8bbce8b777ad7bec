"""Peak memory of the commands that read a large file of many lines: ``validate`` (a cases file),
``label apply`` (a labels file), ``label agree`` (two labels files) and ``cases draft`` (a query
log whose lines are all dropped as too long). Goal: peak RSS ≤ 3 × the input + 300 MB.

The inputs are generated here (``--mb``, default 100 MB for each command's main input), each
command runs as a fresh process (``python -m retrieval_gate …``) under a small wrapper, and its
peak resident set is the child's ``ru_maxrss`` (``resource.getrusage(RUSAGE_CHILDREN)``).

    PYTHONPATH=src python benchmarks/bench_stream_memory.py [--mb 100] [--src OTHER/src] [--only NAME]

``--src`` points at another checkout's ``src`` (e.g. the code before a change) to measure its
commands the same way, on the same generated inputs.

- ``validate``: a KB of 200 cards, a cases file of short cases (``{"id", "query", "gold"}``) up to
  ``--mb``.
- ``label apply``: the same KB, a golden set of 20,000 cases (one gold card each), a labels file of
  decisions for those cases (each case × 50 other cards, one relevant) up to ``--mb``: the golden set
  gets every relevant card, the sidecar every "not relevant" one.
- ``label agree``: two labels files of ``--mb`` / 2 each, the second disagreeing on one pair in 20.
- ``cases draft``: a text log of distinct lines of 100,000 characters each up to ``--mb``, every one
  over ``--max-chars`` (so dropped before any model is loaded: the command exits 2, "no query left").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs argv[1:] as a child and prints its exit status and peak RSS in kB (Linux: ru_maxrss is kB).
WRAPPER = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

CARDS = 200
CASES_LABELLED = 20_000
CARDS_PER_CASE = 50
LONG_LINE = 100_000


def _card_text(i: int) -> str:
    return f"Card {i}: how refunds, payouts and invoices work in Ledgerly, part {i}."


def _write_until(path: Path, size: int, line: Callable[[int], str], *, most: int | None = None) -> int:
    """Lines ``line(i)`` written until the file holds ``size`` bytes (or ``most`` lines); how many."""
    written, i = 0, 0
    with path.open("w", encoding="utf-8") as handle:
        while written < size and (most is None or i < most):
            text = line(i) + "\n"
            handle.write(text)
            written += len(text.encode("utf-8"))
            i += 1
    return i


def make_inputs(folder: Path, size: int, src: Path) -> dict[str, Path]:
    kb = folder / "kb.jsonl"
    kb.write_text("".join(json.dumps({"id": f"card-{i:04d}", "text": _card_text(i)}) + "\n" for i in range(CARDS)),
                  encoding="utf-8")
    shas = card_shas(kb, src)
    cases = folder / "cases.jsonl"
    _write_until(cases, size, lambda i: json.dumps({"id": f"c{i:07d}", "query": f"how do I get refund number {i} "
                                                    "back on my card statement", "gold": [f"card-{i % CARDS:04d}"]}))
    golden = folder / "golden.jsonl"
    golden.write_text("".join(json.dumps({"id": f"c{i:07d}", "query": f"how do I get refund number {i} back",
                                          "gold": [f"card-{(i + 100) % CARDS:04d}"]}) + "\n"  # a card not labelled
                              for i in range(CASES_LABELLED)), encoding="utf-8")

    def decision(i: int, *, flip: bool = False) -> str:
        case, k = divmod(i, CARDS_PER_CASE)
        case %= CASES_LABELLED
        card = f"card-{(case + k) % CARDS:04d}"
        grade = int(k == 0) if not (flip and i % 20 == 7) else int(k != 0)
        return json.dumps({"case": f"c{case:07d}", "card": card, "grade": grade, "sha": shas[card],
                           "at": "2026-12-07T08:00:00.000Z"})

    pairs = CASES_LABELLED * CARDS_PER_CASE  # one decision per pair at most
    labels = folder / "labels.jsonl"
    _write_until(labels, size, decision, most=pairs)
    one, two = folder / "labels-a.jsonl", folder / "labels-b.jsonl"
    half = _write_until(one, size // 2, decision, most=pairs)
    _write_until(two, size, lambda i: decision(i, flip=True), most=half)
    log = folder / "log.txt"
    long_text = ("refund my card payment please " * (LONG_LINE // 31 + 1))[:LONG_LINE]
    _write_until(log, size, lambda i: f"{i:08d} {long_text}")
    return {"kb": kb, "cases": cases, "golden": golden, "labels": labels, "one": one, "two": two, "log": log}


def card_shas(kb: Path, src: Path) -> dict[str, str]:
    """Each card's content hash, as the package's own KB manifest states it (so the labels are
    current, not stale) — read from the package under measure in a child process."""
    code = ("import json, sys\nfrom pathlib import Path\nfrom retrieval_gate.load.kb import load_kb\n"
            "from retrieval_gate.score.kb_manifest import kb_manifest\n"
            "print(json.dumps({c: m.sha for c, m in kb_manifest(load_kb(Path(sys.argv[1])).cards).items()}))")
    out = subprocess.run([sys.executable, "-c", code, str(kb)], env={**os.environ, "PYTHONPATH": str(src)},
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def peak(argv: list[str], src: Path, cwd: Path) -> tuple[int, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", WRAPPER, *argv], env=env, cwd=cwd, capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[0]), int(out[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of each command's main input, in MB (10^6 bytes)")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the package source to measure")
    parser.add_argument("--only", action="append", default=[], help="measure only this command (repeatable)")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    src = args.src.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / ".git").mkdir()  # label apply writes inside a repository only
        f = make_inputs(folder, size, src)
        run = [sys.executable, "-m", "retrieval_gate"]
        commands = {
            "validate": ([*run, "validate", "--kb", str(f["kb"]), "--cases", str(f["cases"])], [f["kb"], f["cases"]]),
            "label apply": ([*run, "label", "apply", str(f["labels"]), "--kb", str(f["kb"]), "--cases",
                             str(f["golden"])], [f["kb"], f["golden"], f["labels"]]),
            "label agree": ([*run, "label", "agree", str(f["one"]), str(f["two"])], [f["one"], f["two"]]),
            "cases draft": ([*run, "cases", "draft", "--queries", str(f["log"]), "--out", str(folder / "draft"),
                             "--kb", str(f["kb"]), "--cases", str(f["golden"])], [f["log"]]),
        }
        print(f"source: {src}")
        print("| command | input MB | exit | peak RSS MB | goal MB (3 × input + 300) |")
        print("|---|--:|--:|--:|--:|")
        for name, (argv, inputs) in commands.items():
            if args.only and name not in args.only:
                continue
            megabytes = sum(p.stat().st_size for p in inputs) / 1024**2
            code, rss = peak(argv, src, folder)
            print(f"| `{name}` | {megabytes:.1f} | {code} | {rss:,.0f} | {3 * megabytes + 300:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
