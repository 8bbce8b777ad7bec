from __future__ import annotations

from pathlib import Path

import typer

from retrieval_gate.cli.app import app, console


@app.command()
def score(
    run: Path = typer.Option(..., "--run", help="Run to score: TREC run file or JSONL {id, retrieved}."),
    cases: Path = typer.Option(..., "--cases", help="Golden set: JSONL cases or a BEIR folder."),
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base: maps chunk ids to cards and checks gold ids."),
    k: str = typer.Option("1,3,5,10", "--k", help="Cutoffs, comma-separated."),
    metrics: str | None = typer.Option(None, "--metrics", help="Measures to compute (default: all of hit,recall,ndcg,mrr,precision,map)."),
    headline_k: int | None = typer.Option(None, "--headline-k", help="The k shown first in reports (default 5 if measured, else the largest)."),
    suite: str = typer.Option("default", "--suite", help="Suite name recorded in the results."),
    abstain_threshold: float | None = typer.Option(None, "--abstain-threshold", help="Score no-gold cases as abstention: a hit only when nothing scores ≥ this."),
    out: Path = typer.Option(..., "--out", help="Where to write results JSON."),
) -> None:
    """Score a precomputed run against the golden set."""
    from retrieval_gate.clock import now_iso
    from retrieval_gate.files import write_json_atomic
    from retrieval_gate.load.dataset import load_dataset
    from retrieval_gate.load.runs import load_run
    from retrieval_gate.metrics import MEASURES_ALL, metric_grid
    from retrieval_gate.render.terminal import print_results
    from retrieval_gate.score.assemble import assemble_results
    from retrieval_gate.score.results import InputInfo
    from retrieval_gate.settings import ConfigFile, resolve_suite

    suite_config = resolve_suite(ConfigFile(), suite="default", config_path=None,
                                 overrides={"k": k, "metrics": metrics, "headline_k": headline_k})
    case_set, loaded_kb = load_dataset(cases=cases, kb=kb)
    loaded_run = load_run(run)
    grid = metric_grid(suite_config.k, suite_config.metrics or MEASURES_ALL)
    results = assemble_results(
        case_set=case_set,
        rankings=loaded_run.rankings,
        metrics=grid,
        ks=suite_config.k,
        kb=loaded_kb,
        suite=suite,
        config={"retriever": f"run:{loaded_run.format}", "k": list(suite_config.k)},
        inputs={"run": InputInfo(path=loaded_run.path, sha256=loaded_run.sha256,
                                 format=loaded_run.format, count=len(loaded_run.rankings))},
        headline_k=suite_config.headline_k,
        created_at=now_iso(),
        abstain_threshold=abstain_threshold,
    )
    write_json_atomic(out, results.to_json_data())
    print_results(results, console)
    console.print(f"wrote {out}")
