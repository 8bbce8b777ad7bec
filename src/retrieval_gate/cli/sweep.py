"""``retrieval-gate sweep``: a grid of retrieval settings measured on the suite's own cases, each
point paired with the suite's current settings; ``sweep --shard I/N`` runs a share of the points
and ``sweep merge PART… --out sweep.json`` joins the shares (docs/sweep.md).

The work is ``sweep.plan`` (the grid), ``sweep.run`` (the evals) and ``sweep.stats`` (the
statistics, pure); this module reads the flags and the config file and writes the files."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import typer

from retrieval_gate.cli.app import CliProgress, app, console, err_console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.environment import onnx_export_root, read_environment
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.files import confined, write_json_atomic, write_text_atomic
from retrieval_gate.metrics.names import default_headline_k, parse_metric
from retrieval_gate.sweep.apply import edit_config
from retrieval_gate.sweep.html import render_sweep_html
from retrieval_gate.sweep.render import markdown as to_markdown
from retrieval_gate.sweep.render import terminal_table, verdict_lines

PART_KIND = "retrieval-gate sweep part"
PART_SCHEMA_VERSION = 1


def _metric(suite_config: Any, given: str | None) -> str:
    text = given or suite_config.sweep.metric or f"ndcg@{suite_config.headline_k or default_headline_k(suite_config.k)}"
    return parse_metric(text).name


def _print(sweep: dict[str, Any]) -> None:
    console.print(terminal_table(sweep), markup=False, highlight=False, soft_wrap=True)
    for line in verdict_lines(sweep):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _write(sweep: dict[str, Any], *, out: Path, markdown: Path | None, html: Path | None) -> None:
    write_json_atomic(out, data=sweep)
    console.print(f"wrote {out}", markup=False, soft_wrap=True)
    if markdown is not None:
        write_text_atomic(markdown, text=to_markdown(sweep))
        console.print(f"wrote {markdown}", markup=False, soft_wrap=True)
    if html is not None:
        write_text_atomic(html, text=render_sweep_html(sweep))
        console.print(f"wrote {html}", markup=False, soft_wrap=True)


def _read_part(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), None, f"cannot read: {exc}")) from None
    except json.JSONDecodeError as exc:
        raise InputError(Problem(str(path), exc.lineno, f"not JSON: {exc.msg}")) from None
    if not isinstance(data, dict) or data.get("kind") != PART_KIND:
        raise InputError(Problem(str(path), 1, "not a sweep part (written by `retrieval-gate sweep --shard I/N`)"))
    if data.get("schema_version") != PART_SCHEMA_VERSION:
        raise InputError(Problem(str(path), 1, f"sweep part schema_version {data.get('schema_version')!r} "
                                 f"(this version reads {PART_SCHEMA_VERSION})"))
    return data


def merge_parts(paths: list[Path]) -> dict[str, Any]:
    """Parts of one plan (every shard once) → the ``sweep.json`` mapping a single run writes."""
    from retrieval_gate.sweep.plan import check_point
    from retrieval_gate.sweep.stats import finalize

    parts = [(path, _read_part(path)) for path in paths]
    for path, part in parts:  # a part is an artifact of another job: its points are checked as a plan's are
        try:
            check_point(part["axes"], where=f"{path} (axes)")
            check_point(part["reference"], where=f"{path} (reference)")
            for run in part["runs"]:
                check_point(run["settings"], where=f"{path} (a run's settings)")
        except (KeyError, TypeError):
            raise InputError(Problem(str(path), None, "not a sweep part: axes, reference or runs' settings "
                                     "missing or not mappings")) from None
    first_path, first = parts[0]
    count = first["shard"][1]
    seen: dict[int, Path] = {}
    for path, part in parts:
        for field in ("plan", "suite", "metric", "seed", "alpha"):
            if part[field] != first[field]:
                raise InputError(Problem(str(path), None, f"{field} {part[field]!r} differs from {first_path}'s "
                                         f"{first[field]!r}: the parts are not shares of one sweep"))
        index, n = part["shard"]
        if n != count:
            raise InputError(Problem(str(path), None, f"shard {index}/{n} of a sweep split in {count} ({first_path})"))
        if index in seen:
            raise InputError(Problem(str(path), None, f"shard {index}/{n} is also {seen[index]}"))
        seen[index] = path
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise UsageError(f"sweep merge: shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing")
    runs = {run["key"]: run for _path, part in parts for run in part["runs"]}
    absent = [key for key in first["order"] if key not in runs]
    if absent:
        raise UsageError(f"sweep merge: {len(absent)} point(s) of the plan are in no part")
    return finalize(suite=first["suite"], axes=first["axes"], reference=first["reference"],
                    runs=[runs[key] for key in first["order"]], metric=first["metric"], seed=first["seed"],
                    alpha=first["alpha"])


def apply_winner(sweep: dict[str, Any], *, config_path: Path | None, suite: str, base: Any) -> None:
    """Write the winner into the suite's block of the config file (comments kept), checked by
    reading it back; where the file cannot be edited line by line, print the change instead."""
    from retrieval_gate.settings import parse_config, resolve_suite
    from retrieval_gate.sweep.plan import Override, check_point

    if sweep["winner"] is None:
        console.print("--apply: no confirmed winner, so nothing to apply; the config file is unchanged", markup=False)
        return
    if config_path is None:
        raise UsageError("--apply needs a config file (retrieval-gate.yml, or --config FILE) to write the winner into")
    try:
        text = config_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(config_path), None, f"cannot read: {exc}")) from None
    winner = sweep["winner"]
    check_point(winner, where="--apply (the winner)")  # never a key a sweep may not touch, whatever made it
    edited = edit_config(text, suite=suite, settings=winner)
    wanted = Override(values=winner).apply(base).model_dump()
    ok = False
    if edited is not None:
        try:
            again = resolve_suite(parse_config(edited, source=config_path), suite=suite,
                                  config_path=config_path)
            ok = again.model_dump() == wanted
        except InputError:
            ok = False
    if not ok:
        lines = [f"suites.{suite}: set {key}: {json.dumps(value)}" for key, value in winner.items()]
        console.print(f"--apply: {config_path} is not written in a shape this edit handles (flow mappings, anchors); "
                      "it is unchanged. Set these by hand:\n" + "\n".join(lines), markup=False, soft_wrap=True)
        return
    assert edited is not None
    diff = difflib.unified_diff(text.splitlines(), edited.splitlines(), str(config_path), str(config_path), lineterm="")
    write_text_atomic(confined(config_path), text=edited)  # a config linked out of the repository: refused
    console.print("\n".join(diff), markup=False, highlight=False, soft_wrap=True)
    console.print(f"applied the winner to {config_path} (suite {suite})", markup=False)


@app.command("sweep")
def sweep_command(
    args: list[str] | None = typer.Argument(None, help="`merge PART…`: join the parts of `sweep --shard I/N` runs."),
    axis: list[str] | None = typer.Option(None, "--axis", help="KEY=V1,V2,… (repeatable): a key of the suite's settings (chunking.size, chunking.overlap, model, retriever, options.bm25_k1, store.exact, …) and its values. Default: the suite's sweep.axes."),
    metric: str | None = typer.Option(None, "--metric", help="The measure that picks the winner (default: the suite's sweep.metric, else ndcg at the headline k)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the selection/confirmation split and the tests (default: sweep.seed, 0)."),
    shard: str | None = typer.Option(None, "--shard", help="I/N: run the I-th of N shares of the points (whole index builds); --out then writes a part for `sweep merge`."),
    store: Path | None = typer.Option(None, "--store", help="Persistent store folder (default: the suite's, .retrieval-gate/store); its embedding cache makes a rerun embed nothing."),
    ephemeral: bool = typer.Option(False, "--ephemeral", help="An in-memory store and cache for the whole sweep: nothing is kept."),
    config: Path | None = typer.Option(None, "--config", help="Config file (default ./retrieval-gate.yml when present)."),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file: its cases, KB and current settings (the reference point)."),
    out: Path = typer.Option(..., "--out", help="Where to write sweep.json (with --shard: the part)."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also write the summary as Markdown (e.g. $GITHUB_STEP_SUMMARY)."),
    html: Path | None = typer.Option(None, "--html", help="Also write a self-contained HTML page: the table and each numeric axis's knee chart."),
    apply: bool = typer.Option(False, "--apply", help="Write a confirmed winner's settings into the suite in the config file (comments kept), so the next gate judges against them."),
) -> None:
    """Measure a grid of retrieval settings on the suite's cases against its current settings:
    paired deltas, a winner confirmed on cases it was not chosen on, the knee of each numeric axis.
    Exit 0 ok; 2 bad input."""
    from retrieval_gate.overrides import StoreOverrides, SuiteOverrides
    from retrieval_gate.settings import load_config, resolve_suite

    if args:
        if args[0] != "merge":
            raise UsageError(f"sweep: unexpected argument {args[0]!r} (did you mean `sweep merge PART…`?)")
        if len(args) < 2:
            raise UsageError("sweep merge needs the part files: sweep merge PART… --out sweep.json")
        parts = [Path(a) for a in args[1:]]
        refuse_output_onto_inputs(outputs={"--out": out, "--markdown": markdown, "--html": html},
                                  inputs={f"part {p}": p for p in parts})
        merged = merge_parts(parts)
        _print(merged)
        _write(merged, out=out, markdown=markdown, html=html)
        if apply:
            config_file, config_path = load_config(config, required=config is not None)
            base = resolve_suite(config_file, suite=merged["suite"], config_path=config_path)
            if merged["winner"] is not None:
                from retrieval_gate.sweep.plan import check_part_winner

                check_part_winner(merged["winner"], where="sweep merge --apply (the winner)", current=base)
            apply_winner(merged, config_path=config_path, suite=merged["suite"], base=base)
        return
    from retrieval_gate.forge import secret_variable_names
    from retrieval_gate.forge.guard import refuse_user_code_here
    from retrieval_gate.retrieve.spec import parse_retrievers
    from retrieval_gate.sweep.plan import make_plan, parse_axis, parse_shard
    from retrieval_gate.sweep.run import run_points
    from retrieval_gate.sweep.stats import finalize

    if store is not None and ephemeral:
        raise UsageError("--store and --ephemeral exclude each other: choose one store")
    store_flags = (StoreOverrides(mode="persistent", path=str(store)) if store is not None
                   else StoreOverrides(mode="ephemeral") if ephemeral else None)
    config_file, config_path = load_config(config, required=config is not None)
    env = read_environment()
    names, prefixes = secret_variable_names()
    base = resolve_suite(config_file, suite=suite, overrides=SuiteOverrides(store=store_flags),
                         config_path=config_path, env=env, embed_exports=onnx_export_root(env),
                         denied_variables=names, denied_prefixes=prefixes)
    if axis:
        axes: dict[str, list[Any]] = {}
        for item in axis:
            key, values = parse_axis(item)
            if key in axes:
                raise UsageError(f"--axis {key} is given twice")
            axes[key] = values
        where = "--axis"
    else:
        axes, where = dict(base.sweep.axes), f"{config_path or '<config>'} (suites.{suite}.sweep.axes)"
    refuse_output_onto_inputs(outputs={"--out": out, "--markdown": markdown, "--html": html}, inputs={
        "--kb": Path(base.kb) if base.kb else None, "--cases": Path(base.cases) if base.cases else None,
        "--config": config_path})
    plan = make_plan(base=base, suite=suite, axes=axes, where=where)
    refuse_user_code_here([*base.retrievers, *(spec for value in axes.get("retriever", [])
                                               for spec in parse_retrievers(str(value)))], env=env, command="sweep")
    chosen_metric = _metric(base, metric)
    chosen_seed = seed if seed is not None else base.sweep.seed
    points = list(plan.points)
    if shard is not None:
        index, count = parse_shard(shard)
        points = plan.shard(index, count)
    err_console.print(f"sweep: {len(points)} of {len(plan.points)} point(s) in "
                      f"{len({p.group for p in points})} index build(s)", markup=False, highlight=False)
    progress = CliProgress(err_console)
    try:
        runs = run_points(plan=plan, points=points, base=base, metric=chosen_metric, progress=progress,
                          line=lambda text: err_console.print(text, markup=False, highlight=False, soft_wrap=True))
    finally:
        progress.close()
    if shard is not None:
        write_json_atomic(out, data={
            "schema_version": PART_SCHEMA_VERSION, "kind": PART_KIND, "plan": plan.fingerprint(),
            "shard": [index, count], "suite": suite, "metric": chosen_metric, "seed": chosen_seed,
            "alpha": base.sweep.alpha, "axes": plan.axes, "reference": plan.reference,
            "order": [p.override.key for p in plan.points], "runs": runs})
        console.print(f"wrote {out} (shard {index}/{count}: {len(runs)} point(s))", markup=False)
        return
    result = finalize(suite=suite, axes=plan.axes, reference=plan.reference, runs=runs, metric=chosen_metric,
                      seed=chosen_seed, alpha=base.sweep.alpha)
    _print(result)
    _write(result, out=out, markdown=markdown, html=html)
    if apply:
        apply_winner(result, config_path=config_path, suite=suite,
                     base=resolve_suite(config_file, suite=suite, config_path=config_path))
