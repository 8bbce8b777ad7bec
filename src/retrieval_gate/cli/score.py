from __future__ import annotations

from pathlib import Path

import typer

from retrieval_gate.cli.app import JUDGEMENTS_HELP, MEAN_HELP, REL_LEVEL_HELP, app, console, err_console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.clock import now_iso
from retrieval_gate.errors import UsageError
from retrieval_gate.metrics import DEFAULT_MEASURES, METRICS_HELP, metric_specs


@app.command()
def score(
    run: Path = typer.Option(..., "--run", help="Run to score: TREC run file or JSONL {id, retrieved}."),
    cases: Path = typer.Option(..., "--cases", help="Golden set: JSONL cases, a BEIR folder, or a bare TREC/BEIR qrels file."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base: maps chunk ids to cards and checks gold ids."),
    k: str = typer.Option("1,3,5,10", "--k", help="Cutoffs, comma-separated."),
    metrics: str | None = typer.Option(None, "--metrics", help=METRICS_HELP),
    headline_k: int | None = typer.Option(None, "--headline-k", min=1, help="The k shown first in reports (default 5 if measured, else the largest)."),
    suite: str = typer.Option("default", "--suite", help="Suite name recorded in the results."),
    abstain_threshold: float | None = typer.Option(None, "--abstain-threshold", help="Score no-gold cases as abstention: a hit only when nothing scores ≥ this."),
    rel_level: int = typer.Option(1, "--rel-level", help=REL_LEVEL_HELP),
    mean: str = typer.Option("relevant", "--mean", help=MEAN_HELP),
    judgements: str | None = typer.Option(None, "--judgements", help=JUDGEMENTS_HELP),
    out: Path = typer.Option(..., "--out", help="Where to write results JSON."),
) -> None:
    """Score a precomputed run against the golden set (`trec_eval qrels run` is
    `score --cases qrels --run run --mean trec`). Exit 2 when no case of the golden set is in the
    run (the ids do not match: nothing was measured), when every ranking of it is empty, or (with
    --kb) when more than half of the distinct ids it returns are not cards of the KB."""
    refuse_output_onto_inputs(outputs={"--out": out}, inputs={"--run": run, "--cases": cases, "--kb": kb})
    from retrieval_gate.artifacts.label_sidecar import golden_judgements, not_relevant_by_case
    from retrieval_gate.artifacts.run_files import write_results
    from retrieval_gate.load.dataset import load_dataset
    from retrieval_gate.load.runs import check_run_matches, load_run
    from retrieval_gate.overrides import SuiteOverrides
    from retrieval_gate.render.terminal import print_results
    from retrieval_gate.render.verdict import gold_missing_lines
    from retrieval_gate.score.assemble import assemble_results
    from retrieval_gate.score.results import InputInfo
    from retrieval_gate.score.validity import check_rankings
    from retrieval_gate.settings import ConfigFile, resolve_suite

    if judgements is not None:
        from retrieval_gate.compare.judgements import check_judgements

        check_judgements(judgements)
    suite_config = resolve_suite(ConfigFile(), suite="default", config_path=None,
                                 overrides=SuiteOverrides(k=k, metrics=metrics, headline_k=headline_k,
                                                          abstain_threshold=abstain_threshold,
                                                          rel_level=rel_level, mean=mean))
    case_set, loaded_kb = load_dataset(cases=cases, kb=kb, missing_gold="score")
    loaded_run = load_run(run)
    warning = check_run_matches(run_ids=loaded_run.rankings, case_ids=[c.id for c in case_set.cases],
                                run_path=loaded_run.path, cases_path=case_set.path)
    if warning is not None:
        err_console.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    check = check_rankings((loaded_run.rankings.get(c.id) for c in case_set.cases), kb=loaded_kb)
    problem = check.problem(f"--run {loaded_run.path}")  # every ranking empty, most ids not cards: exit 2
    if problem is not None:
        raise UsageError(problem)
    if (note := check.warning(f"--run {loaded_run.path}")) is not None:
        err_console.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)
    grid = metric_specs(suite_config.k, measures=suite_config.metrics or DEFAULT_MEASURES)
    results = assemble_results(
        case_set=case_set,
        rankings=loaded_run.rankings,
        metrics=grid,
        ks=suite_config.k,
        kb=loaded_kb,
        suite=suite,
        config={"retriever": f"run:{loaded_run.format}", "k": list(suite_config.k),
                "judgements": judgements or golden_judgements(case_set)},
        inputs={"run": InputInfo(path=loaded_run.path, sha256=loaded_run.sha256,
                                 format=loaded_run.format, count=len(loaded_run.rankings))},
        headline_k=suite_config.headline_k,
        created_at=now_iso(),
        abstain_threshold=suite_config.abstain_threshold,
        rel_level=suite_config.rel_level,
        mean=suite_config.mean,
        not_relevant=not_relevant_by_case(Path(case_set.path), kb=loaded_kb),
    )
    write_results(out, results=results)
    for warning in gold_missing_lines(results):  # deleted gold cards are a measured loss, not an input error
        err_console.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    print_results(results, console=console)
    console.print(f"wrote {out}", markup=False, highlight=False, soft_wrap=True)
