"""``retrieval-gate embed``: one shard of the embedding work, for a CI matrix.

N jobs run ``embed --shard I/N --out DIR`` (each embeds a deterministic 1/N of the passages and
queries), upload ``DIR`` as an artifact; one job downloads them all and runs
``eval --cache-from …``, which embeds nothing the shards hold. See docs/eval.md."""

from __future__ import annotations

from pathlib import Path

import typer

from retrieval_gate.cli.app import CliProgress, app, console, err_console
from retrieval_gate.defaults import MAX_BATCH_SIZE, MIN_BATCH_SIZE, MIN_CHUNK_SIZE
from retrieval_gate.environment import onnx_export_root, read_environment


@app.command("embed")
def embed_command(
    shard: str = typer.Option(..., "--shard", help="Which shard: I/N (1 ≤ I ≤ N), e.g. 2/4."),
    out: Path = typer.Option(..., "--out", help="Shard folder to write (embeddings.sqlite3 + shard.json); upload it as an artifact."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (as for eval)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set (as for eval): its queries are embedded too."),
    model: str | None = typer.Option(None, "--model", help="sentence-transformers model (as for eval; default the bundled all-MiniLM-L6-v2)."),
    chunk_size: int | None = typer.Option(None, "--chunk-size", min=MIN_CHUNK_SIZE, help="As for eval (must match the eval's chunking)."),
    chunk_overlap: int | None = typer.Option(None, "--chunk-overlap", min=0, help="As for eval."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=MIN_BATCH_SIZE, max=MAX_BATCH_SIZE, help="Embedding batch size (default 64; keep the eval's)."),
    device: str | None = typer.Option(None, "--device", help="cpu (default), cuda, mps or auto."),
    embed_backend: str | None = typer.Option(None, "--embed-backend", help="auto (default), torch, onnx or onnx-int8 (as for eval; keep the eval's)."),
    config: Path | None = typer.Option(None, "--config", help="Config file (default ./retrieval-gate.yml when present)."),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """Embed one shard (I/N) of the KB's passages and the cases' queries into a shard folder, in
    the embedding cache's format. Exit 0; 2 on bad input."""
    from retrieval_gate.embed.shards import parse_shard
    from retrieval_gate.evaluation.embed_shard import embed_shard
    from retrieval_gate.overrides import ChunkOverrides, SuiteOverrides
    from retrieval_gate.settings import load_config, resolve_suite

    index, count = parse_shard(shard)
    overrides = SuiteOverrides(kb=str(kb) if kb is not None else None, cases=str(cases) if cases is not None else None,
                               model=model, batch_size=batch_size, device=device, embed_backend=embed_backend,
                               chunking=ChunkOverrides(size=chunk_size, overlap=chunk_overlap))
    config_file, config_path = load_config(config, required=config is not None)
    suite_config = resolve_suite(config_file, suite=suite, overrides=overrides, config_path=config_path,
                                 embed_exports=onnx_export_root(read_environment()))
    progress = CliProgress(err_console)
    try:
        manifest = embed_shard(suite_config=suite_config, shard=(index, count), out=out, progress=progress)
    finally:
        progress.close()
    emb = manifest["embedding"]
    console.print(f"shard {manifest['shard']}: {manifest['passages']} of {manifest['kb']['chunks']} chunks' distinct "
                  f"passages and {manifest['queries']} of {manifest['cases']['count']} queries; "
                  f"{emb['passages_embedded'] + emb['queries_embedded']} embedded now, "
                  f"{emb['passages_cached'] + emb['queries_cached']} already in {out}", markup=False, soft_wrap=True)
    console.print(f"wrote {out}", markup=False, soft_wrap=True)
