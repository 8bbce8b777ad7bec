"""Audit speed and memory at scale: ``retrieval-gate audit`` on 100,000 cards × 10,000 cases.

The cards are built from real text: sentences of the SciFact corpus (``../shared/datasets``)
drawn at random into cards of 6–12 sentences (about 150–300 words), 1 % of them lightly edited
copies of another card (so the near-duplicate path has work to do). Cases: 10,000 queries — the
300 SciFact claims, 2 % sentences copied from a card (leakage), the rest the words of a pool
sentence in shuffled order
— with 1–3 gold cards, two kinds, four locales, a dev/heldout split. The command runs as a
subprocess under ``/usr/bin/time -v`` (wall, CPU, peak RSS); the target is ≤ 60 s here.

Run: ``python benchmarks/bench_audit.py [--cards 100000] [--cases 10000] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATASET = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "scifact"
if not DATASET.is_dir():
    DATASET = Path("/work/shared/datasets/scifact")


def sentences() -> tuple[list[str], list[str]]:
    pool, claims = [], []
    with (DATASET / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line)["text"]
            pool.extend(s for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 6)
    with (DATASET / "queries.jsonl").open(encoding="utf-8") as handle:
        claims = [json.loads(line)["text"] for line in handle]
    return pool, claims


def edit(text: str, rng: random.Random, rate: float) -> str:
    words = text.split()
    for i in range(len(words)):
        if rng.random() < rate:
            words[i] = rng.choice(words)
    return " ".join(words)


def build(folder: Path, n_cards: int, n_cases: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    pool, claims = sentences()
    kb, cases = folder / "kb.jsonl", folder / "cases.jsonl"
    texts: list[str] = []
    with kb.open("w", encoding="utf-8") as out:
        for i in range(n_cards):
            if i and rng.random() < 0.01:
                text = edit(texts[rng.randrange(len(texts))], rng, 0.03)
            else:
                text = " ".join(rng.choice(pool) for _ in range(rng.randint(6, 12)))
            texts.append(text)
            meta = {"doc_type": rng.choice(["faq", "guide", "policy", "api"]), "locale": rng.choice(["en", "pt"])}
            out.write(json.dumps({"id": f"c{i}", "title": "", "text": text, "metadata": meta}) + "\n")
    with cases.open("w", encoding="utf-8") as out:
        for i in range(n_cases):
            r = rng.random()
            if r < 0.03:
                query = claims[i % len(claims)]
            elif r < 0.05:  # copied from a card: leakage
                query = rng.choice(re.split(r"(?<=[.!?])\s+", texts[rng.randrange(n_cards)]))
            else:  # words of a pool sentence, shuffled: on topic, not copied
                words = rng.choice(pool).split()[:rng.randint(6, 14)]
                rng.shuffle(words)
                query = " ".join(words)
            gold = sorted({f"c{rng.randrange(n_cards)}" for _ in range(rng.randint(1, 3))})
            out.write(json.dumps({
                "id": f"q{i}", "query": query, "gold": gold,
                "kind": "adversarial" if rng.random() < 0.1 else "golden",
                "locale": rng.choice(["en-US", "pt-BR", "es-ES", "de-DE"]),
                "split": "heldout" if rng.random() < 0.2 else "dev",
            }) + "\n")
    return kb, cases


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-audit-"))
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    kb, cases = build(folder, args.cards, args.cases, args.seed)
    print(f"built {args.cards} cards, {args.cases} cases in {time.perf_counter() - t0:.1f} s "
          f"({kb.stat().st_size / 1e6:.0f} MB KB)")
    out = folder / "audit.json"
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "retrieval_gate", "audit", "--kb", str(kb),
           "--cases", str(cases), "--out", str(out), "--coverage", "kind,locale,split,gold.doc_type"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, COLUMNS="160"))
    if proc.returncode != 0:
        sys.exit(proc.stdout[-3000:] + proc.stderr[-3000:])
    stats = dict(line.strip().split(": ", 1) for line in proc.stderr.splitlines() if ": " in line)
    cpu = float(stats["User time (seconds)"]) + float(stats["System time (seconds)"])
    rss = int(stats["Maximum resident set size (kbytes)"]) / 1024
    report = json.loads(out.read_text(encoding="utf-8"))
    print(f"audit: wall {stats['Elapsed (wall clock) time (h:mm:ss or m:ss)']}, CPU {cpu:.1f} s, "
          f"peak RSS {rss:,.0f} MiB")
    print("findings by kind:", {k: v for k, v in report["by_kind"].items() if v})
    print(f"near-duplicate clusters: {report['counts']['near_duplicate_clusters']}")
    phases(kb, cases)


def phases(kb: Path, cases: Path) -> None:
    """CPU seconds per phase, in this process: load + validate, chunk, the pure audit."""
    from retrieval_gate.audit import AuditParams, run_audit
    from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
    from retrieval_gate.load.dataset import load_dataset

    t = time.process_time()
    case_set, loaded = load_dataset(cases=cases, kb=kb)
    t_load = time.process_time() - t
    t = time.process_time()
    chunks: dict[str, int] = {}
    for chunk in chunk_kb(loaded, ChunkSettings()):
        chunks[chunk.card_id] = chunks.get(chunk.card_id, 0) + 1
    t_chunk = time.process_time() - t
    t = time.process_time()
    run_audit(cases=case_set.cases, entries=loaded.cards, params=AuditParams(coverage=("kind", "locale", "split",
              "gold.doc_type")), chunks=chunks)
    t_audit = time.process_time() - t
    print(f"CPU s per phase: load + validate {t_load:.1f}, chunk {t_chunk:.1f}, audit core {t_audit:.1f}")


if __name__ == "__main__":
    main()
