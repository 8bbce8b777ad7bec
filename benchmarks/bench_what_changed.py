"""What "what changed and why" costs: the baseline's size with rankings, and the extra time of a
PR run (the KB manifest in the eval, the changed cases in compare, the section in the comment).

Suites (the real eval through the console entry point, then the pieces timed in this process):

- ``examples``: this repository's example suite (48 Markdown cards, 62 cases), the dense
  retriever with the bundled model; the PR empties the text of two gold cards;
- ``scifact``: BEIR SciFact test split (5,183 abstracts, 300 queries), BM25 (no embedding, so the
  run is about the comparison, not the model); the PR empties the text of 10 gold documents;
- ``synthetic``: 10,000 cases, 10 ranked cards each with scores, 24 metrics (no eval).

Per suite: baseline bytes per case in the previous layout (schema 3: scores as objects, no
rankings; written here the way that release wrote it) and in this one (schema 4: scores as a list
aligned with ``score_keys``, plus the ranking and its scores), and the time (best of ``--repeat``)
of ``kb_manifest`` over the loaded KB, the change analysis (``attach_changes``) beside the whole
``compare``, and the comment rendered with and without the section; ``pr_eval_s`` is the PR run's
own eval time (its results' ``extras.timings.total_s``), for scale.

Run: ``python benchmarks/bench_what_changed.py [--scifact ../shared/datasets/scifact] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from retrieval_gate.artifacts.run_files import read_results
from retrieval_gate.baseline.codec import dumps_baseline
from retrieval_gate.baseline.model import DECIMALS
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.changes import attach_changes
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.load.kb import load_kb
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.render.markdown import render_comment
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.kb_manifest import kb_manifest

ROOT = Path(__file__).resolve().parents[1]


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def schema3_bytes(baseline) -> int:
    """The baseline text as the previous release wrote it: per case ``{"scores": {metric: v},
    "slices": […], "status"?}`` on one line, no rankings (the rest of the file is unchanged)."""
    data = json.loads(dumps_baseline(baseline))
    keys = data.pop("score_keys")
    lines = []
    for case_id, case in sorted(data.pop("cases").items()):
        item = {"scores": {k: round(float(v), DECIMALS) for k, v in zip(keys, case.get("scores", []), strict=False)
                           if v is not None}}
        if "status" in case:
            item["status"] = case["status"]
        if case.get("slices"):
            item["slices"] = case["slices"]
        lines.append(f"    {json.dumps(case_id)}: {json.dumps(item, sort_keys=True, separators=(', ', ': '))}")
    data.pop("rankings", None)
    rest = json.dumps(data, sort_keys=True, indent=2)
    return len(rest.encode()) + sum(len(line.encode()) + 2 for line in lines) + 16


def measure(name: str, *, before, after, kb_cards_fn, repeat: int) -> dict:
    baseline = update_baseline(baseline=None, results=before, sha="a" * 40, ref="main", timestamp=None)
    new_bytes, old_bytes = len(dumps_baseline(baseline).encode()), schema3_bytes(baseline)
    n = len(baseline.cases)
    kb_before = before.kb_cards
    t_manifest, _ = best(kb_cards_fn, repeat) if kb_cards_fn else (0.0, None)
    gate = GateSettings()
    t_compare, comparison = best(lambda: compare(results=after, baseline=baseline, gate=gate, kb_before=kb_before),
                                 repeat)
    t_attach, _ = best(lambda: attach_changes(comparison, results=after, baseline=baseline, kb_before=kb_before),
                       repeat)
    bare = comparison.model_copy(update={"changed_cases": [], "kb_changes": None})
    t_comment, text = best(lambda: render_comment(results=after, comparison=comparison, baseline=baseline), repeat)
    t_bare, _ = best(lambda: render_comment(results=after, comparison=bare, baseline=baseline), repeat)
    causes: dict[str, int] = {}
    for c in comparison.changed_cases:
        causes[c.cause] = causes.get(c.cause, 0) + 1
    timings = after.extras.get("timings", {}) if isinstance(after.extras, dict) else {}
    return {"suite": name, "cases": n, "pr_eval_s": timings.get("total_s"),
            "baseline_schema3_bytes": old_bytes, "baseline_bytes": new_bytes,
            "per_case_schema3": round(old_bytes / n), "per_case": round(new_bytes / n),
            "manifest_s": round(t_manifest, 4), "compare_s": round(t_compare, 3), "changes_s": round(t_attach, 4),
            "comment_s": round(t_comment, 3), "comment_without_section_s": round(t_bare, 3),
            "changed_cases": len(comparison.changed_cases), "causes": causes, "comment_chars": len(text)}


def _eval(args: list[str], out: Path) -> None:
    subprocess.run([sys.executable, "-m", "retrieval_gate", "eval", *args, "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def examples(tmp: Path, repeat: int) -> dict:
    kb = tmp / "kb"
    shutil.copytree(ROOT / "examples" / "kb", kb)
    base_args = ["--cases", str(ROOT / "examples" / "cases.jsonl"), "--store", str(tmp / "store"), "--exact"]
    _eval(["--kb", str(kb), *base_args], tmp / "before.json")
    for name in ("plans-limits.md", "shortcuts-keyboard.md"):
        path = kb / "en-US" / name
        path.write_text(f"---{path.read_text().split('---', 2)[1]}---\nThis article is being rewritten.\n")
    _eval(["--kb", str(kb), *base_args], tmp / "after.json")
    loaded = load_kb(kb)
    return measure("examples (dense, 62 cases)", before=read_results(tmp / "before.json"),
                   after=read_results(tmp / "after.json"), kb_cards_fn=lambda: kb_manifest(loaded.cards),
                   repeat=repeat)


def scifact(folder: Path, tmp: Path, repeat: int) -> dict:
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip()]
    gold = [line.split("\t")[1] for line in (folder / "qrels.tsv").read_text().splitlines()[1:] if line.strip()]
    kb = tmp / "scifact"
    kb.mkdir()
    for name in ("queries.jsonl", "qrels.tsv"):
        shutil.copy(folder / name, kb / name)
    (kb / "corpus.jsonl").write_text((folder / "corpus.jsonl").read_text())
    args = ["--kb", str(kb / "corpus.jsonl"), "--cases", str(kb), "--retriever", "bm25", "--ephemeral"]
    _eval(args, tmp / "sf_before.json")
    emptied = set(sorted(set(gold))[:10])
    (kb / "corpus.jsonl").write_text("".join(
        json.dumps({**d, "text": "This abstract is being rewritten."} if d["_id"] in emptied else d) + "\n"
        for d in corpus))
    _eval(args, tmp / "sf_after.json")
    loaded = load_kb(kb / "corpus.jsonl")
    return measure("scifact (bm25, 300 cases)", before=read_results(tmp / "sf_before.json"),
                   after=read_results(tmp / "sf_after.json"), kb_cards_fn=lambda: kb_manifest(loaded.cards),
                   repeat=repeat)


def synthetic(n: int, repeat: int) -> dict:
    ks, measures = (1, 3, 5, 10), ("hit", "recall", "ndcg", "mrr", "precision", "map")
    cases = [Case(id=f"q{i:05d}", query=f"question {i}", gold=(f"doc{i:07d}",), locale=("en", "pt-BR")[i % 2])
             for i in range(n)]

    def run(seed: int):
        rng = random.Random(seed)
        rankings = {}
        for case in cases:
            ids = [f"doc{rng.randrange(5_000_000):07d}" for _ in range(10)]
            if rng.random() < 0.7:
                ids[rng.randrange(10)] = case.gold[0]
            ids = list(dict.fromkeys(ids))
            rankings[case.id] = RankedList(ids=tuple(ids), scores=tuple(sorted((rng.random() for _ in ids),
                                                                              reverse=True)))
        case_set = CaseSet(cases=tuple(cases), path="cases.jsonl", sha256="0" * 64, format="jsonl")
        return assemble_results(case_set=case_set, rankings=rankings, metrics=metric_specs(ks, measures), ks=ks)

    return measure(f"synthetic ({n:,} cases, 10-char ids)", before=run(1), after=run(2), kb_cards_fn=None,
                   repeat=repeat)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, default=ROOT.parent.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    print(f"# {platform.python_version()} on {platform.machine()}, best of {args.repeat}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(examples(Path(tmp), args.repeat))
        if args.scifact.is_dir():
            rows.append(scifact(args.scifact, Path(tmp), args.repeat))
    rows.append(synthetic(args.cases, args.repeat))
    for row in rows:
        print(json.dumps(row, sort_keys=False))


if __name__ == "__main__":
    main()
