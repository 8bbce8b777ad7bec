"""``retrieval-gate cases draft``: from a query log to a drafted golden set to label (docs/golden-set.md).
The work is ``golden.cases_draft``; this module turns flags into a suite and prints what it wrote."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from retrieval_gate.cli.app import CliProgress, app, console, err_console
from retrieval_gate.environment import onnx_export_root, read_environment
from retrieval_gate.errors import UsageError

cases_app = typer.Typer(name="cases", help="Build a golden set: draft cases from a query log to label.",
                        no_args_is_help=True, add_completion=False, rich_markup_mode=None)
app.add_typer(cases_app, name="cases")


@cases_app.command("draft")
def draft_command(
    queries: Path = typer.Option(..., "--queries", help="Query log: text (one query a line), JSONL or CSV/TSV with a query column."),
    out: Path = typer.Option(..., "--out", help="Folder for draft.jsonl, label.html and draft.md."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Existing golden set, counted per intent (default: the suite's)."),
    query_column: str = typer.Option("query", "--query-column", help="The JSONL/CSV column holding the query."),
    keep_pii: bool = typer.Option(False, "--keep-pii", help="Keep personal data unmasked (secrets are masked all the same)."),
    region: str = typer.Option("US", "--region", help="ISO 3166 region national phone numbers are read in (e.g. GB, DE, BR)."),
    slice_column: list[str] = typer.Option([], "--slice-column", help="A log column kept as a tag beside intent and locale "
                                           "(repeatable); every other column is dropped."),
    detect: float = typer.Option(0.05, "--detect", min=0.001, max=1.0, help="The drop in hit@k the set must catch at 80 % power."),
    per_intent: bool = typer.Option(False, "--per-intent", help="Size every intent to catch --detect on its own."),
    size: int | None = typer.Option(None, "--size", min=1, help="Draw this many cases instead of sizing from --detect."),
    seed: int = typer.Option(0, "--seed", help="Seed of every draw (same inputs, same draft)."),
    depth: int = typer.Option(10, "--depth", min=1, max=100, help="Each pool retriever's top cards taken (where --pool names no depth)."),
    pool: str | None = typer.Option(None, "--pool", help="Pool retrievers, comma-separated, any spec the suite takes, each with an optional depth: dense:20,bm25:20,hybrid:10 (default dense,bm25 + the suite's own)."),
    max_chars: int = typer.Option(500, "--max-chars", min=1, help="Drop queries longer than this (a pasted document, not a query); what it drops is the first line of the output."),
    labeller: str = typer.Option("", "--labeller", help="A name the labelling page writes into each label."),
    config: Path | None = typer.Option(None, "--config", help="Config file (default ./retrieval-gate.yml when present)."),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """Clean the log (secrets and personal data masked, columns kept by allow-list, duplicates and
    near-duplicates collapsed), find its intents, draw the cases the --detect drop needs by
    traffic, pool each one's candidates from several retrievers, and write DIR/draft.jsonl,
    DIR/label.html (label with the keyboard) and DIR/draft.md. Exit 0; 2 on bad input."""
    from retrieval_gate.forge.guard import refuse_user_code_here
    from retrieval_gate.golden.cases_draft import (
        DraftOptions,
        draft_cases,
        pool_specs,
        summary_lines,
        write_draft_folder,
    )
    from retrieval_gate.overrides import SuiteOverrides
    from retrieval_gate.settings import load_config, resolve_suite

    config_file, config_path = load_config(config, required=config is not None)
    env = read_environment()
    settings = resolve_suite(config_file, suite=suite, config_path=config_path, embed_exports=onnx_export_root(env),
                             overrides=SuiteOverrides(kb=str(kb) if kb else None, cases=str(cases) if cases else None))
    if settings.kb is None:
        raise UsageError("cases draft needs --kb, or --suite naming a suite with a kb")
    refuse_user_code_here([spec for spec, _ in pool_specs(settings, pool=pool, depth=depth)], env=env, command="cases draft")
    options = DraftOptions(log=queries, query_column=query_column, keep_pii=keep_pii, detect=detect,
                           per_intent=per_intent, size=size, seed=seed, depth=depth, pool=pool, region=region,
                           slice_columns=tuple(slice_column), max_chars=max_chars)
    result = draft_cases(suite_config=settings, suite=suite, options=options, progress=CliProgress(err_console))
    written = write_draft_folder(out, result=result, detect=detect, labeller=labeller)
    summary = summary_lines(result, detect=detect)
    for line in summary[2:summary.index("", 2)]:  # the long-query cut first, then the rest above the table
        console.print(line.removeprefix("- "), markup=False, highlight=False, soft_wrap=True)
    for path in written:
        console.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)
    console.print("next: open the labelling page, label with the keyboard, Download labels, then", markup=False)
    q = shlex.quote
    console.print(f"  retrieval-gate label apply labels.jsonl --draft {q(str(out / 'draft.jsonl'))}"
                  f" --cases {q(str(settings.cases or 'cases.jsonl'))}"
                  + (f" --kb {q(str(settings.kb))}" if kb is not None else ""), markup=False, highlight=False,
                  soft_wrap=True)
