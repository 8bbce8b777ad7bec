"""``retrieval-gate history`` on a generated repository: REFRESHES refreshes × CASES cases.

The repository is built with ``git fast-import`` (seconds, not the minutes of 500 ``git commit``
calls). Each refresh commits ``baselines/default.json`` in the codec's schema-4 text (24 score keys,
a ranking of 10 cards with their scores per case: the size a real refresh commits) and the KB
manifest beside it. What moves:

- every refresh edits ``EDITS`` KB cards; each case whose ranking holds an edited card drifts
  (nDCG by a random step, the hit flipping when it crosses 0.3): real, explained changes;
- ``FLAKY`` planted cases flip their hit at random (p = 0.3) at refreshes where nothing of theirs
  changed (their rankings hold cards no refresh edits): they must be found, and no other case;
- three settings changes (the model) re-draw 30 % of the cases;
- the golden set grows by 10 cases every 50 refreshes (its hash changes).

Measured: the wall time of ``history`` (the figure for docs/performance.md, with the load average
of the shared machine), the page's size, its load time in headless Chromium (tests/browser.py),
the planted flaky cases found, and any stable case called flaky.

    PYTHONPATH=src python benchmarks/bench_history.py [--refreshes 500] [--cases 3000] [--out DIR]
        [--repo DIR] [--src OTHER/src]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEYS = [f"{m}@{k}" for m in ("hit", "map", "mrr", "ndcg", "precision", "recall") for k in (1, 3, 5, 10)]
EDITS = 6
FLAKY = 8
CARDS = 4000
RESERVED = 200  # cards no refresh edits: the planted flaky cases rank only these
SETTINGS_AT = (120, 260, 400)
GROWTH_EVERY, GROWTH = 50, 10


def case_line(case_id: str, ndcg: float, ranked: list[str], slices: list[str]) -> str:
    hit = 1 if ndcg >= 0.3 else 0
    values = {"hit": hit, "map": round(ndcg * 0.9, 6), "mrr": round(ndcg * 0.95, 6), "ndcg": round(ndcg, 6),
              "precision": round(hit * 0.2, 6), "recall": hit}
    scores = [values[k.split("@")[0]] for k in KEYS]
    body = {"ranked": ranked, "ranked_scores": [round(0.9 - 0.05 * i, 4) for i in range(len(ranked))],
            "scores": scores, "slices": slices}
    return f"    {json.dumps(case_id)}: {json.dumps(body, sort_keys=True, separators=(', ', ': '))}"


def baseline_text(*, cases: dict[str, float], ranked: dict[str, list[str]], slices: dict[str, list[str]],
                  model: str, cases_hash: str, kb_hash: str, sha: str, stamp: str) -> str:
    by_slice: dict[str, list[str]] = {}
    for case_id in cases:
        for name in slices[case_id]:
            by_slice.setdefault(name, []).append(case_id)
    aggregates = {}
    for name, members in sorted(by_slice.items()):
        cells = {}
        for key in KEYS:
            measure = key.split("@")[0]
            total = 0.0
            for c in members:
                n = cases[c]
                hit = 1 if n >= 0.3 else 0
                total += {"hit": hit, "recall": hit, "ndcg": n, "map": n * 0.9, "mrr": n * 0.95,
                          "precision": hit * 0.2}[measure]
            cells[key] = {"n": len(members), "value": round(total / len(members), 6)}
        aggregates[name] = cells
    head = {"aggregates": aggregates, "completeness": {"expected": len(cases), "failed": 0, "no_gold": 0,
                                                       "scored": len(cases)},
            "fingerprint": {"config": {"model": model, "retriever": "dense"}, "k": [1, 3, 5, 10],
                            "inputs": {"cases": cases_hash, "kb": kb_hash},
                            "relevance": {"graded": False, "level": 1, "mean": "relevant"}},
            "headline_k": 5, "history": [], "k": [1, 3, 5, 10], "metrics": KEYS, "rankings": True,
            "ref": "refs/heads/main", "schema_version": 4, "score_keys": KEYS, "sha": sha,
            "suite": "default", "tool_version": "0.1.0", "updated_at": stamp}
    lines = ["{"]
    for key, value in sorted(head.items()):
        if key == "history":
            lines.append('  "cases": {')
            ids = sorted(cases)
            for i, c in enumerate(ids):
                lines.append(case_line(c, cases[c], ranked[c], slices[c]) + ("," if i < len(ids) - 1 else ""))
            lines.append("  },")
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, sort_keys=True)},")
    lines[-1] = lines[-1].rstrip(",")
    lines.append("}")
    return "\n".join(lines) + "\n"


def manifest_text(kb: dict[str, int]) -> str:
    rows = [f'    "{c}": {{"sha": "{v:064x}", "title": "{c}"}}' for c, v in sorted(kb.items())]
    return '{\n  "cards": {\n' + ",\n".join(rows) + '\n  },\n  "schema_version": 1,\n  "suite": "default"\n}\n'


def planted_cases(*, refreshes: int, n_cases: int, seed: int = 7) -> dict[str, object]:
    """The flaky cases ``build_repo`` plants with the same arguments (its first draw)."""
    rng = random.Random(seed)
    start = n_cases - GROWTH * ((refreshes - 1) // GROWTH_EVERY)
    return {"flaky": sorted(rng.sample([f"case-{i:05d}" for i in range(n_cases)][:start], FLAKY))}


def build_repo(repo: Path, *, refreshes: int, n_cases: int, seed: int = 7) -> dict[str, object]:
    rng = random.Random(seed)
    start = n_cases - GROWTH * ((refreshes - 1) // GROWTH_EVERY)
    kb = {f"card-{i:05d}": 0 for i in range(CARDS)}
    editable = [f"card-{i:05d}" for i in range(RESERVED, CARDS)]
    reserved = [f"card-{i:05d}" for i in range(RESERVED)]
    all_ids = [f"case-{i:05d}" for i in range(n_cases)]
    flaky = sorted(rng.sample(all_ids[:start], FLAKY))
    ndcg = {c: rng.choice((0.0, 0.2, 0.45, 0.6, 0.8, 1.0)) for c in all_ids}
    ranked = {c: rng.sample(reserved if c in flaky else editable, 10) for c in all_ids}
    slices = {c: ["overall", f"locale={'pt-BR' if i % 3 == 0 else 'en-US'}", f"tag.team=t{i % 6}"]
              for i, c in enumerate(all_ids)}
    holds: dict[str, list[str]] = {}
    for c, cards in ranked.items():
        for card in cards:
            holds.setdefault(card, []).append(c)
    model, size = "all-MiniLM-L6-v2", start
    proc = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=repo, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    out = proc.stdin
    t0 = 1767225600  # 2026-01-01
    for r in range(refreshes):
        if r and r % GROWTH_EVERY == 0:
            size += GROWTH
        current = all_ids[:size]
        if r:
            for card in rng.sample(editable, EDITS):
                kb[card] += 1
                for c in holds.get(card, ()):
                    if rng.random() < 0.5:
                        ndcg[c] = min(1.0, max(0.0, round(ndcg[c] + rng.choice((-0.2, -0.1, 0.1, 0.2)), 6)))
            for c in flaky:
                if rng.random() < 0.3:
                    ndcg[c] = 0.0 if ndcg[c] >= 0.3 else 0.6
            if r in SETTINGS_AT:
                model = f"model-{r}"
                for c in rng.sample(current, len(current) * 3 // 10):
                    ndcg[c] = rng.choice((0.0, 0.2, 0.45, 0.6, 0.8, 1.0))
        cases = {c: ndcg[c] for c in current}
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + r * 4 * 3600))
        text = baseline_text(cases=cases, ranked=ranked, slices=slices, model=model,
                             cases_hash=f"{size:064x}", kb_hash=f"{sum(kb.values()):064x}", sha=f"{r:040x}",
                             stamp=stamp).encode()
        manifest = manifest_text(kb).encode()
        message = f"retrieval-gate: refresh baseline default (#{1000 + r})\n".encode()
        out.write(b"blob\nmark :%d\ndata %d\n" % (3 * r + 1, len(text)) + text + b"\n")
        out.write(b"blob\nmark :%d\ndata %d\n" % (3 * r + 2, len(manifest)) + manifest + b"\n")
        out.write(b"commit refs/heads/main\nmark :%d\ncommitter bench <bench@example.invalid> %d +0000\n"
                  % (3 * r + 3, t0 + r * 4 * 3600))
        out.write(b"data %d\n" % len(message) + message)
        if r:
            out.write(b"from :%d\n" % (3 * r))
        out.write(b"M 100644 :%d baselines/default.json\nM 100644 :%d baselines/default.kb.json\n\n"
                  % (3 * r + 1, 3 * r + 2))
    out.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=repo, check=True)
    return {"flaky": flaky}


def page_load_ms(page_path: Path) -> float | None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from tests.browser import browser
    except ImportError:
        return None
    with browser() as page:
        page.open(page_path)  # warm the browser
        started = time.perf_counter()
        page.open(page_path)
        page.js("new Promise(r => requestAnimationFrame(() => r(1)))")
        return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--refreshes", type=int, default=500)
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1] / "src",
                        help="the package's src folder to time (another checkout's: the figure before a change)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="a repository this script built before with the same --refreshes/--cases (its "
                             "planted cases are re-drawn from the same seed): time `history` only")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rg-bench-history-"))
    try:
        repo = args.repo or work / "repo"
        t = time.perf_counter()
        if args.repo is None:
            repo.mkdir()
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
            planted = build_repo(repo, refreshes=args.refreshes, n_cases=args.cases)
        else:
            planted = planted_cases(refreshes=args.refreshes, n_cases=args.cases)
        built = time.perf_counter() - t
        site = args.out or work / "site"
        load_before = os.getloadavg()
        cpu_before = os.times().children_user + os.times().children_system
        t = time.perf_counter()
        src = str(args.src.resolve())
        env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
        done = subprocess.run([sys.executable, "-m", "retrieval_gate", "history", "--out", str(site.resolve())],
                              cwd=repo, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        children = os.times()
        cpu = children.children_user + children.children_system - cpu_before
        load_after = os.getloadavg()
        if done.returncode != 0:
            raise SystemExit(f"history failed ({done.returncode}): {done.stderr[-2000:]}")
        data = json.loads((site / "default.json").read_text())
        page = site / "default.html"
        found = sorted(data["flaky"])
        report = {
            "refreshes": args.refreshes, "cases": args.cases, "build_repo_s": round(built, 1),
            "src": src, "history_wall_s": round(wall, 2), "history_cpu_s": round(cpu, 2),
            "load_avg_before": load_before, "load_avg_after": load_after,
            "cpus": os.cpu_count(), "page_bytes": page.stat().st_size,
            "json_bytes": (site / "default.json").stat().st_size,
            "points": len(data["points"]), "planted_flaky": planted["flaky"], "flaky_found": found,
            "planted_found": sorted(set(planted["flaky"]) & set(found)),
            "stable_called_flaky": sorted(set(found) - set(planted["flaky"])),
            "page_load_ms": page_load_ms(page),
        }
        print(json.dumps(report, indent=2))
    finally:
        if args.out is None and args.repo is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
