"""Embedding paths side by side: speed, and whether the numbers stay the same.

On a SciFact subset (``bench_shards.subset``: the first ``--queries`` test queries with judgments,
all their judged docs, other docs up to ``--docs``), with the bundled all-MiniLM-L6-v2, each
variant embeds every passage (``title text``, as ``eval`` makes of a JSONL card) and every query
in its own process, one after the other:

- ``plain`` — the reference: ``SentenceTransformer(folder).encode(texts)`` with its defaults
  (batch 32, its own longest-first sort inside the call), nothing of ours;
- ``default`` — our path as ``eval`` runs it: ``CachedEmbedder`` (distinct texts, longest first,
  slices of 256) over ``SentenceTransformerEmbedder`` (batch 64), 2 torch threads;
- ``torch-b16`` / ``torch-b128`` — the same with batch 16 / 128; ``torch-1thread`` — batch 64,
  ``torch.set_num_threads(1)``;
- ``no-length-sort`` — sentence-transformers called once per 64 texts in corpus order (what
  length-bucketed batching saves: each batch pads to its longest text);
- ``onnx`` / ``onnx-int8`` — ``--embed-backend onnx|onnx-int8`` through ``CachedEmbedder``
  (the export and the quantization are made once beforehand and timed apart).

Each variant's vectors are searched exactly (cosine, ties by doc id) and scored with pytrec_eval
(nDCG@10 per query), independently of our scorer; variants may repeat, interleaved
(``--variants plain,onnx,plain,onnx``), to see the machine's drift — speed-ups are against the
first ``plain``; the table gives passages/s, queries/s, CPU
seconds of the embedding, the process's peak RSS, the speed-up over ``plain``, the max |Δ| of
per-query nDCG@10 against ``plain`` (with how many queries differ at all) and the max |Δ| of any
vector component. Then ``retrieval-gate eval --ephemeral --embed-backend B`` for each backend as
a whole process: wall and CPU seconds, and its per-case nDCG@10 (from results.json) against
``plain``'s pytrec_eval figures.

Run: ``PYTHONPATH=src python benchmarks/bench_embed_backends.py [--docs 500] [--queries 150]``
(exits 0 with a note when the dataset is absent).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"
VARIANTS = ("plain", "default", "torch-b16", "torch-b128", "torch-1thread", "no-length-sort", "onnx", "onnx-int8")
BACKENDS = ("torch", "onnx", "onnx-int8")


# -- child: one variant in its own process ------------------------------------------------------------
def export(folder: Path) -> None:
    """The ONNX export and the int8 quantization, each timed (wall, CPU)."""
    from retrieval_gate.embed.onnx import ensure_exported
    from retrieval_gate.embed.resolve import resolve_model

    ref = resolve_model("all-MiniLM-L6-v2")
    timings = {}
    for step, quantized in (("export", False), ("quantize", True)):
        began, cpu = time.perf_counter(), time.process_time()
        ensure_exported(ref, folder=folder / "onnx" / ref.sha256, quantized=quantized)
        timings[step] = (time.perf_counter() - began, time.process_time() - cpu)
    (folder / "export.json").write_text(json.dumps(timings), encoding="utf-8")


def child(variant: str, folder: Path) -> None:
    if variant == "export":
        export(folder)
        return
    texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))
    passages, queries = texts["passages"], texts["queries"]
    began = time.perf_counter()
    import torch

    from retrieval_gate.embed.resolve import resolve_model

    ref = resolve_model("all-MiniLM-L6-v2")
    if variant == "torch-1thread":
        torch.set_num_threads(1)
    if variant in ("plain", "no-length-sort"):
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(ref.path), device="cpu", local_files_only=True)
        if variant == "plain":
            def encode(items: list[str], kind: str) -> np.ndarray:
                return model.encode(items, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        else:
            def encode(items: list[str], kind: str) -> np.ndarray:
                return np.concatenate([model.encode(items[i:i + 64], batch_size=64, normalize_embeddings=True,
                                                    convert_to_numpy=True, show_progress_bar=False)
                                       for i in range(0, len(items), 64)])
        model.encode(["warm up"])
    else:
        from retrieval_gate.embed.backends import make_embedder
        from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
        from retrieval_gate.embed.settings import EmbedSettings

        backend = variant if variant in ("onnx", "onnx-int8") else "torch"
        batch = {"torch-b16": 16, "torch-b128": 128}.get(variant, 64)
        settings = EmbedSettings(backend=backend, batch_size=batch, export_root=folder / "onnx")
        inner = make_embedder(ref, settings=settings)
        inner.embed_documents(["warm up"])  # loads the model (and torch / the ONNX session)

        def encode(items: list[str], kind: str) -> np.ndarray:
            cached = CachedEmbedder(inner, EmbeddingCache(None))
            return cached.embed_documents(items) if kind == "document" else cached.embed_queries(items)
    loaded = time.perf_counter() - began
    timings: dict[str, float] = {"load_s": loaded, "threads": torch.get_num_threads()}
    vectors = {}
    for kind, items in (("document", passages), ("query", queries)):
        cpu, wall = time.process_time(), time.perf_counter()
        vectors[kind] = np.asarray(encode(items, kind), dtype=np.float32)
        timings[f"{kind}_s"] = time.perf_counter() - wall
        timings[f"{kind}_cpu_s"] = time.process_time() - cpu
    np.savez(folder / f"{variant}.npz", passages=vectors["document"], queries=vectors["query"])
    (folder / f"{variant}.json").write_text(json.dumps(timings), encoding="utf-8")


def spawn(argv: list[str], *, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Run a process; (wall s, CPU s user+system, peak RSS MiB) from ``wait4``."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{argv[2:]} failed ({proc.returncode}): {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


# -- parent ---------------------------------------------------------------------------------------------
def ndcg10(passages: np.ndarray, queries: np.ndarray, *, doc_ids: list[str], query_ids: list[str],
           qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Exact cosine top-10 (ties by doc id), nDCG@10 per query by pytrec_eval."""
    import pytrec_eval

    scores = queries @ passages.T
    run = {}
    for i, q in enumerate(query_ids):
        top = sorted(range(len(doc_ids)), key=lambda j, row=scores[i]: (-row[j], doc_ids[j]))[:10]
        run[q] = {doc_ids[j]: float(10 - rank) for rank, j in enumerate(top)}
    evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in query_ids}, {"ndcg_cut.10"})
    return {q: m["ndcg_cut_10"] for q, m in evaluator.evaluate(run).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--evals", default=",".join(BACKENDS), help="backends to run `eval` with ('' for none)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder)
        return
    if "plain" not in args.variants.split(","):
        raise SystemExit("--variants must include plain (the reference)")
    if not (args.dataset / "corpus.jsonl").is_file():
        print(f"skipped: no BEIR dataset at {args.dataset}")
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_shards import subset

    from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
    from retrieval_gate.load.cases import load_cases
    from retrieval_gate.load.kb import load_kb

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        kb_path, cases_path = subset(args.dataset, folder, docs=args.docs, queries=args.queries)
        chunks = chunk_kb(load_kb(kb_path), ChunkSettings())
        cases = load_cases(cases_path).cases
        doc_ids = [c.parent_id for c in chunks]
        query_ids = [c.id for c in cases]
        qrels = {c.id: {g: 1 for g in c.gold} for c in cases}
        (folder / "texts.json").write_text(json.dumps({"passages": [c.text for c in chunks],
                                                       "queries": [c.query for c in cases]}), encoding="utf-8")
        print(f"SciFact subset: {len(chunks)} passages, {len(cases)} queries; bundled all-MiniLM-L6-v2; "
              f"os.cpu_count() = {os.cpu_count()}")
        # In a child, as every variant: this process stays small, so each child's peak RSS is its own
        # (a forked child starts from its parent's high-water mark).
        spawn([sys.executable, __file__, "--child", "export", "--folder", str(folder)])
        for step, (wall, cpu) in json.loads((folder / "export.json").read_text(encoding="utf-8")).items():
            print(f"{'ONNX export' if step == 'export' else 'int8 quantization'}: {wall:.1f} s wall, {cpu:.1f} s CPU "
                  "(once per model; reused after)")
        rows, results = [], {}
        for variant in args.variants.split(","):
            wall, cpu, rss = spawn([sys.executable, __file__, "--child", variant, "--folder", str(folder)])
            t = json.loads((folder / f"{variant}.json").read_text(encoding="utf-8"))
            vecs = np.load(folder / f"{variant}.npz")
            results[variant] = (vecs["passages"], vecs["queries"],
                                ndcg10(vecs["passages"], vecs["queries"], doc_ids=doc_ids, query_ids=query_ids,
                                       qrels=qrels))
            rows.append((variant, t, cpu, rss))
        ref_p, ref_q, ref_ndcg = results["plain"]
        plain_rate = next(len(chunks) / t["document_s"] for v, t, _, _ in rows if v == "plain")  # the first
        print(f"plain nDCG@10 (pytrec_eval, mean of {len(query_ids)}): {np.mean(list(ref_ndcg.values())):.4f}")
        print("| path | passages/s | queries/s | embedding CPU s | peak RSS MiB | speed-up (passages) "
              "| max \\|Δ nDCG@10\\| per query | queries differing | mean Δ nDCG@10 | max \\|Δ vector\\| |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for variant, t, _cpu, rss in rows:
            p, q, nd = results[variant]
            deltas = np.array([nd[k] - ref_ndcg[k] for k in query_ids])
            vec = max(float(np.abs(p - ref_p).max()), float(np.abs(q - ref_q).max()))
            rate = len(chunks) / t["document_s"]
            print(f"| {variant} | {rate:.1f} | {len(cases) / t['query_s']:.1f} "
                  f"| {t['document_cpu_s'] + t['query_cpu_s']:.1f} | {rss} | {rate / plain_rate:.2f}× "
                  f"| {np.abs(deltas).max():.4g} | {int((deltas != 0).sum())} | {deltas.mean():+.5f} | {vec:.2g} |")
        evals = [b for b in args.evals.split(",") if b]
        if evals:
            print("| `eval --embed-backend` | wall s | CPU s | peak RSS MiB | max \\|Δ nDCG@10\\| vs plain "
                  "| queries differing |")
            print("|---|--:|--:|--:|--:|--:|")
        for backend in evals:
            out = folder / f"eval-{backend}.json"
            wall, cpu, rss = spawn([sys.executable, "-m", "retrieval_gate", "eval", "--kb", str(kb_path), "--cases",
                                    str(cases_path), "--ephemeral", "--embed-backend", backend, "--out", str(out)],
                                   env={"RETRIEVAL_GATE_ONNX_DIR": str(folder / "onnx")})
            got = {c["id"]: c["scores"]["ndcg@10"] for c in json.loads(out.read_text(encoding="utf-8"))["cases"]}
            deltas = np.array([got[k] - ref_ndcg[k] for k in query_ids])
            print(f"| {backend} | {wall:.1f} | {cpu:.1f} | {rss} | {np.abs(deltas).max():.4g} "
                  f"| {int((np.abs(deltas) > 1e-9).sum())} |")


if __name__ == "__main__":
    main()
