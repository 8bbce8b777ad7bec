"""``retrieval-gate eval``: KB → chunks → embeddings → store → one or more retrievers (dense, bm25,
hybrid, +rerank, custom) → one results JSON per retriever, and a side-by-side table when several.

The work is ``evaluation.run.run_evals``; this module turns flags into a suite config and shows
progress. Heavy imports (chromadb, sentence-transformers, torch) happen inside the command, and
torch only when something has to be embedded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from retrieval_gate.cli.app import JUDGEMENTS_HELP, MEAN_HELP, REL_LEVEL_HELP, CliProgress, app, console, err_console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.clock import now_iso
from retrieval_gate.defaults import MAX_BATCH_SIZE, MAX_OVERFETCH, MIN_BATCH_SIZE, MIN_CHUNK_SIZE, MIN_OVERFETCH
from retrieval_gate.environment import onnx_export_root, read_environment
from retrieval_gate.errors import UsageError
from retrieval_gate.files import write_json_atomic
from retrieval_gate.metrics import METRICS_HELP

if TYPE_CHECKING:
    from retrieval_gate.overrides import SuiteOverrides
    from retrieval_gate.score.results import Results
    from retrieval_gate.settings import SuiteConfig

def eval_overrides(**flags: Any) -> SuiteOverrides:
    """Flags → the overrides laid over the config file's suite (None = not given)."""
    from retrieval_gate.overrides import ChunkOverrides, StoreOverrides, SuiteOverrides

    modes = [name for name, on in (("--store", flags["store"] is not None), ("--ephemeral", bool(flags["ephemeral"])),
                                   ("--chroma-host", flags["chroma_host"] is not None)) if on]
    if len(modes) > 1:
        raise UsageError(f"{' and '.join(modes)} exclude each other: choose one store")
    if flags["chroma_port"] is not None and flags["chroma_host"] is None:
        raise UsageError("--chroma-port needs --chroma-host")
    searched = {"exact": flags["exact"], "ann_check": flags["ann_check"]}
    if flags["store"] is not None:
        store = StoreOverrides(mode="persistent", path=str(flags["store"]), **searched)
    elif flags["ephemeral"]:
        store = StoreOverrides(mode="ephemeral", **searched)
    elif flags["chroma_host"] is not None:
        store = StoreOverrides(mode="http", host=flags["chroma_host"], port=flags["chroma_port"], **searched)
    else:
        store = StoreOverrides(**searched)
    return SuiteOverrides(
        kb=str(flags["kb"]) if flags["kb"] is not None else None,
        cases=str(flags["cases"]) if flags["cases"] is not None else None,
        k=flags["k"], metrics=flags["metrics"], headline_k=flags["headline_k"], model=flags["model"],
        retriever=flags["retriever"], overfetch=flags["overfetch"], batch_size=flags["batch_size"],
        device=flags.get("device"), embed_backend=flags.get("embed_backend"),
        abstain_threshold=flags["abstain_threshold"], rel_level=flags.get("rel_level"), mean=flags.get("mean"),
        judgements=flags.get("judgements"), options=flags.get("options"),
        chunking=ChunkOverrides(size=flags["chunk_size"], overlap=flags["chunk_overlap"], unit=flags.get("chunk_unit")),
        store=store,
    )


def output_path(out: Path, slug: str, many: bool) -> Path:
    """``--out results.json`` for one retriever; ``results.<slug>.json`` for each of several."""
    return out.with_name(f"{out.stem}.{slug}{out.suffix or '.json'}") if many else out


def summary_lines(results: Results) -> list[str]:
    lines = []
    emb = results.extras.get("embedding")
    store = results.extras.get("store")
    if emb:
        lines.append(f"embedding: {emb['passages_embedded']} passages embedded ({emb['passages_cached']} from the "
                     f"cache); {emb['queries_embedded']} of {emb['queries']} queries embedded")
    if store:
        lines.append(f"store: {store['chunks']} chunks · {store['added']} written · {store['deleted']} deleted · "
                     f"{store['unchanged']} unchanged"
                     + (f" · {store['relabeled']} rewritten with new metadata (not embedded)"
                        if store.get("relabeled") else "")
                     + (f" · rebuilt ({store['rebuilt']})" if store["rebuilt"] else ""))
    cut = results.extras.get("truncation")
    if cut and cut.get("chunks"):
        from retrieval_gate.evaluation.chunks import truncation_line

        lines.append(f"truncation: {truncation_line(cut)}")
    ann = results.extras.get("ann_check")
    if ann and ann.get("recall") is not None:
        deltas = ", ".join(f"{m} {d:+.4f}" for m, d in ann["delta"].items())
        lines.append(f"ANN check: HNSW returned {ann['recall']:.4f} of the exact top-{ann['k']} cards; "
                     f"{ann['queries_differing']} of {ann['queries']} rankings differ; HNSW − exact: {deltas}")
    sample = results.extras.get("ann_sample")
    if sample and sample.get("recall") is not None:
        lines.append(sample["note"] or f"ANN check: on {sample['queries']} sampled queries, the HNSW index returned "
                                       f"{sample['recall']:.3f} of the exact top-{sample['k']} cards")
    return lines


@app.command("eval")
def eval_command(
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base: folder of Markdown/text cards, JSONL cards, or a BEIR folder."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set: JSONL cases or a BEIR folder."),
    k: str | None = typer.Option(None, "--k", help="Cutoffs, comma-separated (default 1,3,5,10)."),
    metrics: str | None = typer.Option(None, "--metrics", help=METRICS_HELP),
    headline_k: int | None = typer.Option(None, "--headline-k", min=1, help="The k shown first (default 5 if measured, else the largest)."),
    model: str | None = typer.Option(None, "--model", help="sentence-transformers model: name or local folder (default: the bundled all-MiniLM-L6-v2, offline), or openai:NAME (an OpenAI-compatible endpoint: options base_url, api_key; docs/retrievers.md)."),
    retriever: str | None = typer.Option(None, "--retriever", help="dense (default), bm25, hybrid, X+rerank, python:module:function, http(s)://URL, run:FILE; comma-separated to run several side by side (the first is the reference for paired deltas)."),
    option: list[str] | None = typer.Option(None, "--option", help="Retriever option KEY=VALUE (repeatable), e.g. bm25_k1=1.2, rrf_k=60, rerank_model=PATH; see docs/retrievers.md."),
    reference: str | None = typer.Option(None, "--reference", help="With several retrievers: the one the others are compared with (default: the first)."),
    store: Path | None = typer.Option(None, "--store", help="Persistent store folder (default .retrieval-gate/store); reruns reuse it."),
    ephemeral: bool = typer.Option(False, "--ephemeral", help="An in-memory store and cache: nothing is kept."),
    chroma_host: str | None = typer.Option(None, "--chroma-host", help="Use a Chroma server at this host."),
    chroma_port: int | None = typer.Option(None, "--chroma-port", min=1, max=65535, help="Port of the Chroma server (default 8000)."),
    chunk_size: int | None = typer.Option(None, "--chunk-size", min=MIN_CHUNK_SIZE, help="Markdown/text cards: max characters per chunk (default 1200)."),
    chunk_overlap: int | None = typer.Option(None, "--chunk-overlap", min=0, help="Characters shared by consecutive chunks of a section (default 150)."),
    chunk_unit: str | None = typer.Option(None, "--chunk-unit", help="What --chunk-size and --chunk-overlap count: characters (default) or tokens (the model's word pieces)."),
    overfetch: int | None = typer.Option(None, "--overfetch", min=MIN_OVERFETCH, max=MAX_OVERFETCH, help="Chunks fetched per wanted card at first (default 3; doubled until k distinct cards)."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=MIN_BATCH_SIZE, max=MAX_BATCH_SIZE, help="Embedding batch size (default 64)."),
    device: str | None = typer.Option(None, "--device", help="Embedding device: cpu (default), cuda, mps or auto (cuda or mps when torch sees one). Non-CPU vectors get their own cache space."),
    embed_backend: str | None = typer.Option(None, "--embed-backend", help="auto (default: ONNX Runtime fp32 on the CPU once the checked export of the model is cached, else torch), torch (sentence-transformers), onnx or onnx-int8 (ONNX Runtime on an export of the same weights; exporting needs the onnx extra). Each backend's vectors get their own cache space; see docs/eval.md."),
    cache_from: list[Path] | None = typer.Option(None, "--cache-from", help="Shard folder written by `retrieval-gate embed --shard I/N --out DIR` (or a folder of them): its vectors fill the cache first. Repeatable."),
    exact: bool | None = typer.Option(None, "--exact/--no-exact", help="Search exactly (brute force) or through the HNSW index. Default: exact up to 200,000 chunks (deterministic), HNSW above."),
    ann_check: bool | None = typer.Option(None, "--ann-check/--no-ann-check", help="Also search exactly and report the HNSW index's recall against it."),
    abstain_threshold: float | None = typer.Option(None, "--abstain-threshold", help="Score no-gold cases as abstention: a hit only when no card scores ≥ this cosine."),
    rel_level: int | None = typer.Option(None, "--rel-level", help=REL_LEVEL_HELP),
    mean: str | None = typer.Option(None, "--mean", help=MEAN_HELP),
    judgements: str | None = typer.Option(None, "--judgements", help=JUDGEMENTS_HELP),
    config: Path | None = typer.Option(None, "--config", help="Config file (default ./retrieval-gate.yml when present)."),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file; also names the store collection."),
    out: Path = typer.Option(..., "--out", help="Where to write the results JSON."),
) -> None:
    """Measure a real retrieval stack: embed the KB into Chroma, retrieve for every case, score.
    Exit 0 ok; 2 bad input (missing files, bad gold ids, unknown model offline, bad store)."""
    from retrieval_gate.artifacts.run_files import write_results
    from retrieval_gate.evaluation.run import run_evals
    from retrieval_gate.forge import secret_variable_names
    from retrieval_gate.forge.guard import refuse_user_code_here
    from retrieval_gate.render.terminal import print_results
    from retrieval_gate.render.verdict import gold_missing_lines
    from retrieval_gate.settings import load_config, resolve_suite

    overrides = eval_overrides(kb=kb, cases=cases, k=k, metrics=metrics, headline_k=headline_k, model=model,
                               retriever=retriever, store=store, ephemeral=ephemeral, chroma_host=chroma_host,
                               chroma_port=chroma_port, chunk_size=chunk_size, chunk_overlap=chunk_overlap, chunk_unit=chunk_unit,
                               overfetch=overfetch, batch_size=batch_size, exact=exact, ann_check=ann_check,
                               abstain_threshold=abstain_threshold, device=device, embed_backend=embed_backend,
                               options=parse_options(option or []), rel_level=rel_level, mean=mean,
                               judgements=judgements)
    config_file, config_path = load_config(config, required=config is not None)
    env = read_environment()  # for http_headers: ${NAME}, and the folder of ONNX exports
    names, prefixes = secret_variable_names()
    suite_config: SuiteConfig = resolve_suite(config_file, suite=suite, overrides=overrides, config_path=config_path,
                                              env=env, embed_exports=onnx_export_root(env),
                                              denied_variables=names, denied_prefixes=prefixes)
    specs = suite_config.retrievers
    refuse_user_code_here(specs, env=env, command="eval", model=suite_config.model)
    many = len(specs) > 1
    outputs: dict[str, Path | None] = {"--out": out}
    if many:
        outputs.update({f"--out ({spec.name})": output_path(out, spec.slug, True) for spec in specs})
        outputs["--out (side by side)"] = out.with_name(f"{out.stem}.side_by_side.json")
    refuse_output_onto_inputs(outputs=outputs, inputs={
        "--kb": Path(suite_config.kb) if suite_config.kb else None,
        "--cases": Path(suite_config.cases) if suite_config.cases else None,
        "--config": config_path,
        **{f"--retriever {spec.name}": Path(spec.target) for spec in specs if spec.kind == "run" and spec.target}})
    if reference is not None and reference not in [s.name for s in specs]:
        raise UsageError(f"--reference {reference!r} is not one of the retrievers ({', '.join(s.name for s in specs)})")
    progress = CliProgress(err_console)
    try:
        all_results = run_evals(suite_config=suite_config, suite=suite, progress=progress, created_at=now_iso(),
                                cache_from=cache_from or ())
    finally:
        progress.close()
    from retrieval_gate.load.boundary import bound_echoes

    for spec in specs:
        results = all_results[spec.name]
        path = output_path(out, spec.slug, many)
        write_results(path, results=results)
        for warning in gold_missing_lines(results):  # deleted gold cards are a measured loss, not an input error
            err_console.print(f"warning: {bound_echoes(str(warning))}", markup=False, highlight=False, soft_wrap=True)
        if (short := short_rankings_line(results)) is not None:
            err_console.print(f"warning: {bound_echoes(short)}", markup=False, highlight=False, soft_wrap=True)
        if many:
            console.print(f"retriever {spec.name}", markup=False)
        print_results(results, console=console)
        for line in summary_lines(results):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        console.print(f"wrote {path}", markup=False, soft_wrap=True)
    if many:
        write_side_by_side(all_results, out=out, reference=reference)


def short_rankings_line(results: Any) -> str | None:
    """For a framework retriever k could not be passed to (``config.details.k_passed_as``: "not
    passed"): how many answered rankings hold fewer than the headline k distinct cards — the
    over-fetch cannot ask it for more, so those lists are measured as short; None otherwise."""
    details = results.config.get("details") if isinstance(results.config, dict) else None
    if not isinstance(details, dict) or details.get("k_passed_as") != "not passed":
        return None
    k = results.headline_k
    answered = [case for case in results.cases if case.error is None]
    short = sum(1 for case in answered if len(dict.fromkeys(case.retrieved)) < k)
    if not short:
        return None
    return (f"retriever {results.config.get('retriever')!r} takes no k (k_passed_as: not passed): {short} of "
            f"{len(answered)} rankings hold fewer than {k} distinct cards, measured as they are (it returns what it "
            "returns whatever is asked: set its own k or search_kwargs in your app, or give its "
            "_get_relevant_documents a k parameter)")


def parse_options(items: list[str]) -> dict[str, Any] | None:
    """``--option KEY=VALUE`` → ``{KEY: VALUE}``, the value read as a YAML scalar (numbers,
    booleans, lists like ``[a, b]``) by the config file's own loader (``load.yamltext``), so
    flags and the config file's ``options:`` agree."""
    import yaml

    from retrieval_gate.load.yamltext import safe_load

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option {item!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = safe_load(raw, aliases=True) if raw.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out or None


def write_side_by_side(all_results: dict[str, Results], *, out: Path, reference: str | None) -> None:
    """Several retrievers: one table with paired deltas vs the reference, and its JSON
    (``<out stem>.side_by_side.json``)."""
    from retrieval_gate.compare.side_by_side import side_by_side
    from retrieval_gate.render.side_by_side import side_by_side_table

    sbs = side_by_side(results=all_results, reference=reference)
    console.print(side_by_side_table(sbs))
    path = out.with_name(f"{out.stem}.side_by_side.json")
    write_json_atomic(path, data=sbs.to_json_data())
    console.print(f"wrote {path}", markup=False, soft_wrap=True)
