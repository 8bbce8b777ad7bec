"""``retrieval-gate compare``: a results file against a baseline, with the gate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.defaults import DEFAULT_RESAMPLES  # imports nothing: --help stays light
from retrieval_gate.errors import UsageError

if TYPE_CHECKING:
    from retrieval_gate.overrides import GateOverrides


def gate_overrides(
    *, fail_on_regression: bool | None, floor: list[str], max_drop: list[str], alpha: float | None,
    require_significance: bool | None, correction: str | None = None, unjudged: str | None = None,
) -> GateOverrides:
    """Flags → the ``gate`` overrides laid over the config file's (None = not given)."""
    from retrieval_gate.compare.gate import parse_assignment
    from retrieval_gate.overrides import GateOverrides

    floors = dict(parse_assignment(text, flag="--floor") for text in floor)
    drops: dict[str, float] = {}
    default_drop = None
    for text in max_drop:
        if "=" in text:
            key, value = parse_assignment(text, flag="--max-drop")
            drops[key] = value
        else:
            try:
                default_drop = float(text)
            except ValueError:
                raise UsageError(f"--max-drop {text!r}: expected VALUE, METRIC=VALUE or METRIC:SLICE=VALUE") from None
    return GateOverrides(fail_on_regression=fail_on_regression, floors=floors, max_drop=drops,
                         default_max_drop=default_drop, alpha=alpha, require_significance=require_significance,
                         correction=correction, unjudged=unjudged)


@app.command("compare")
def compare_command(
    results: Path = typer.Option(..., "--results", help="Results JSON written by score or eval."),
    baseline: Path | None = typer.Option(None, "--baseline", help="Baseline JSON (default: the suite's 'baseline' in the config file, else baselines/<suite>.json as the action reads it)."),
    fail_on_regression: bool | None = typer.Option(None, "--fail-on-regression/--no-fail-on-regression", help="Exit 1 when a judged metric drops by more than its max drop (and significantly)."),
    floor: list[str] = typer.Option([], "--floor", help="Absolute floor, METRIC=V or METRIC:SLICE=V (e.g. hit@5=0.8, hit@5:locale=pt-BR=0.7); exit 1 when not met. Repeatable."),
    max_drop: list[str] = typer.Option([], "--max-drop", help="Tolerated drop: V (every metric), METRIC=V or METRIC:SLICE=V (default 0.02). Repeatable."),
    alpha: float | None = typer.Option(None, "--alpha", help="Significance level of the p-value (default 0.05); the CI level is 1 − alpha."),
    require_significance: bool | None = typer.Option(None, "--require-significance/--no-require-significance", help="A drop fails only when significant (default on)."),
    correction: str | None = typer.Option(None, "--correction", help="Multiple-comparison correction over the p-values of the rows the gate judges: holm (default), bh or none."),
    unjudged: str | None = typer.Option(None, "--unjudged", help="When a pooled golden set's unjudged cards, labelled one way or the other, change the gate's decision: fail (default: needs-labels, exit 1) or warn (needs-labels, exit 0). Config: gate.unjudged."),
    judgements: str | None = typer.Option(None, "--judgements", help="How the golden set was judged: complete (a card outside the gold is not relevant, as trec_eval reads it: pass or fail, never needs-labels) or pooled (needs-labels only where some labelling of the unjudged cards changes the gate's decision). Default: the suite's 'judgements', else what the results recorded (pooled where the golden set carries pool provenance: the not-relevant sidecar, cases written by label apply from a draft)."),
    seed: int = typer.Option(0, "--seed", min=0, max=2**63 - 1, help="Seed of the sign-flip draws."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", min=1000, max=10_000_000, help="Random sign flips (Monte Carlo p-values and intervals)."),
    config: Path | None = typer.Option(None, "--config", help="Config file (default ./retrieval-gate.yml when present)."),
    suite: str | None = typer.Option(None, "--suite", help="Suite of the config file (default: the results' suite)."),
    out: Path | None = typer.Option(None, "--out", help="Write the comparison JSON here."),
    all_rows: bool = typer.Option(False, "--all", help="Print every metric × slice row, not only the notable ones."),
) -> None:
    """Compare results with a baseline: per metric × slice, paired delta, CI, p-value, status.
    Exit 0 unless a gate is on and fails (1) — or the labels cannot support its verdict
    (needs-labels: 1, 0 with --unjudged warn); 2 on bad input."""
    from retrieval_gate.artifacts.baseline import read_baseline, read_kb_manifest
    from retrieval_gate.artifacts.run_files import read_results, write_comparison
    from retrieval_gate.compare.comparison import compare
    from retrieval_gate.compare.gate_slices import check_comparable
    from retrieval_gate.compare.model import gate_fails
    from retrieval_gate.overrides import SuiteOverrides
    from retrieval_gate.render.terminal import print_comparison
    from retrieval_gate.settings import default_baseline_path, suite_for_results

    refuse_output_onto_inputs(outputs={"--out": out}, inputs={"--results": results, "--baseline": baseline,
                                                                "--config": config})
    if judgements is not None:
        from retrieval_gate.compare.judgements import check_judgements

        check_judgements(judgements)
    loaded = read_results(results)
    overrides = SuiteOverrides(gate=gate_overrides(fail_on_regression=fail_on_regression, floor=floor,
                                                   max_drop=max_drop, alpha=alpha,
                                                   require_significance=require_significance, correction=correction,
                                                   unjudged=unjudged))
    suite_config = suite_for_results(config=config, suite=suite, results_suite=loaded.suite, overrides=overrides)
    baseline_path = baseline if baseline is not None else default_baseline_path(
        configured=suite_config.baseline, suite=suite, results_suite=loaded.suite)
    if baseline is None and not suite_config.baseline and not baseline_path.is_file():
        raise UsageError(f"no baseline: {baseline_path} does not exist; pass --baseline FILE, set 'baseline' for "
                         f"the suite in the config file, or write one (retrieval-gate baseline update --results "
                         f"{results} --baseline {baseline_path})")
    refuse_output_onto_inputs(outputs={"--out": out}, inputs={"--baseline": baseline_path})
    base = read_baseline(baseline_path)
    check_comparable(results=loaded, baseline=base, gate=suite_config.gate, headline_k=suite_config.headline_k)
    comparison = compare(results=loaded, baseline=base, gate=suite_config.gate, seed=seed, resamples=resamples,
                         kb_before=read_kb_manifest(baseline_path),
                         judgements=judgements or suite_config.judgements)
    if out is not None:
        write_comparison(out, comparison=comparison)
    print_comparison(comparison, console=console, all_rows=all_rows,
                     top_up=top_up_commands(results=results, baseline=baseline_path, config=config,
                                            suite=suite if suite is not None else loaded.suite,
                                            inputs=loaded.inputs, judgements=judgements))
    if out is not None:
        console.print(f"wrote {out}", markup=False, soft_wrap=True)
    if gate_fails(comparison):  # a failed gate, or needs-labels unless gate.unjudged: warn
        raise typer.Exit(1)


def top_up_commands(*, results: Path, baseline: Path, config: Path | None, suite: str | None,
                    inputs: Mapping[str, Any], judgements: str | None = None) -> tuple[str, str]:
    """The two ``label top-up`` commands the terminal names (every unjudged card; the decisive ones), with
    this comparison's own files, the KB and golden set the run read (where they are still there) and a
    draft folder that holds no draft yet, so each runs as printed."""
    import shlex

    from retrieval_gate.golden.draft_folder import free_draft_folder

    q = shlex.quote
    where = f" --config {q(str(config))}" if config is not None else ""
    where += f" --suite {q(suite)}" if suite and suite != "default" else ""  # top-up's own default: default
    for flag, name in (("--kb", "kb"), ("--cases", "cases")):
        path = getattr(inputs.get(name), "path", None)
        if path and Path(path).exists():
            where += f" {flag} {q(path)}"
    full = f"retrieval-gate label top-up --results {q(str(results))} --out {q(str(free_draft_folder(Path('top-up'))))}{where}"
    told = f" --judgements {q(judgements)}" if judgements is not None else ""  # compare's flag, read the same way
    decisive = (f"retrieval-gate label top-up --results {q(str(results))} --baseline {q(str(baseline))} "
                f"--out {q(str(free_draft_folder(Path('top-up'))))}{where}{told}")
    return full, decisive
