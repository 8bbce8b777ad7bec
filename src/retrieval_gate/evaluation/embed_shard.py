"""One shard of the embedding work (``retrieval-gate embed --shard I/N --out DIR``): the same
inputs, chunking and model as ``eval``, a deterministic 1/N of the distinct passages and queries
(``embed.shards.shard_texts``), written to ``DIR`` as an embedding cache plus a manifest.

``eval --cache-from DIR …`` then fills its cache from the shard folders and embeds nothing they
hold. A shard folder that already holds a cache is added to (a rerun embeds only what is missing).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from retrieval_gate.embed.base import Embedder
from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.embed.shards import CACHE_FILE, shard_texts, write_manifest
from retrieval_gate.evaluation.dense_parts import EvalProgress, Silent
from retrieval_gate.evaluation.pipeline import prepare
from retrieval_gate.settings import SuiteConfig


def embed_shard(*, suite_config: SuiteConfig, shard: tuple[int, int], out: Path, embedder: Embedder | None = None,
                progress: EvalProgress | None = None) -> dict[str, Any]:
    """Embed shard ``shard = (I, N)`` into ``out``; the manifest's content is returned."""
    began = time.perf_counter()
    progress = progress or Silent()
    index, count = shard
    inputs = prepare(suite_config)
    kb, case_set, chunks = inputs.kb, inputs.case_set, inputs.chunks
    inner = embedder
    if inner is None:
        from retrieval_gate.embed.backends import make_embedder
        from retrieval_gate.embed.resolve import resolve_model

        settings = suite_config.embed
        inner = make_embedder(resolve_model(settings.model), settings=settings)
    passages = shard_texts([c.text for c in chunks], index=index, count=count)
    queries = shard_texts([c.query for c in case_set.cases], index=index, count=count)
    out = Path(out)
    cache = EmbeddingCache(out / CACHE_FILE, notify=progress.note)
    cached = CachedEmbedder(inner, cache, progress=progress.step)
    try:
        if passages:
            cached.embed_documents(passages)
        if queries:
            cached.embed_queries(queries)
    finally:
        cache.seal()
    ident = cached.identity()
    manifest = {
        "shard": f"{index}/{count}", "model": ident.name, "model_sha256": ident.sha256,
        "batch_size": suite_config.batch_size,
        "kb": {"path": kb.path, "sha256": kb.sha256, "chunks": len(chunks)},
        "cases": {"path": case_set.path, "sha256": case_set.sha256, "count": len(case_set.cases)},
        "passages": len(passages), "queries": len(queries),
        "embedding": cached.stats.as_extras(),
        "seconds": round(time.perf_counter() - began, 3),
    }
    write_manifest(out, data=manifest)
    return manifest
