"""``retrieval-gate baseline update``: create or refresh a baseline file from a results file."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.clock import now_iso
from retrieval_gate.defaults import DEFAULT_HISTORY_LIMIT  # imports nothing: --help stays light
from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import folder_lock

baseline_app = typer.Typer(
    name="baseline",
    help="Baseline files: one JSON per suite (baselines/<suite>.json) with per-case scores and history.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(baseline_app, name="baseline")


@baseline_app.command("update")
def update(
    results: Path = typer.Option(..., "--results", help="Results JSON written by score or eval."),
    baseline: Path = typer.Option(..., "--baseline", help="Baseline file to create or refresh, e.g. baselines/default.json."),
    sha: str | None = typer.Option(None, "--sha", help="Commit the results were measured on (recorded in the history)."),
    ref: str | None = typer.Option(None, "--ref", help="Branch or ref (recorded in the history)."),
    timestamp: str | None = typer.Option(None, "--timestamp", help="When (ISO 8601); default now, UTC."),
    history_limit: int = typer.Option(DEFAULT_HISTORY_LIMIT, "--history-limit", min=1, max=100_000, help="Keep the last N history entries."),
) -> None:
    """Create the baseline, or refresh it and append this run's headline numbers to its history.
    Results whose rankings are all empty (nothing retrieved for any case) are refused (exit 2).
    An existing file that cannot be read is never overwritten (exit 2, file untouched). The
    read-merge-write runs under an exclusive lock on the baseline's folder, so concurrent updates
    keep every history entry. A symlinked baseline is written through: its target is updated and
    the link stays a link. The KB's card-hash manifest is written beside it
    (``<suite>.kb.json``) when the results carry one."""
    from retrieval_gate.artifacts.baseline import read_baseline, write_baseline, write_kb_manifest
    from retrieval_gate.artifacts.run_files import read_results
    from retrieval_gate.baseline.update import no_rankings_problem, update_baseline

    refuse_output_onto_inputs(outputs={"--baseline": baseline}, inputs={"--results": results})
    stamp = check_timestamp(timestamp) if timestamp is not None else now_iso()
    loaded = read_results(results)
    if (problem := no_rankings_problem(loaded)) is not None:  # a zero baseline measures nothing: exit 2
        raise InputError(Problem(str(results), None, problem))
    target = Path(os.path.realpath(baseline)) if baseline.is_symlink() else baseline
    with folder_lock(target.parent):
        old = read_baseline(target) if target.exists() else None
        new = update_baseline(baseline=old, results=loaded, sha=sha, ref=ref, timestamp=stamp,
                              history_limit=history_limit)
        write_baseline(target, baseline=new)
        if loaded.kb_cards is not None:  # which cards a later run changes (beside the baseline)
            write_kb_manifest(target, cards=loaded.kb_cards, suite=new.suite)
    verb = "created" if old is None else "updated"
    console.print(f"{verb} {baseline}: suite {new.suite}, {len(new.cases)} cases, "
                  f"history {len(new.history)} entr{'y' if len(new.history) == 1 else 'ies'} "
                  f"(limit {history_limit})", markup=False, soft_wrap=True)


def check_timestamp(text: str) -> str:
    """``--timestamp`` must be ISO 8601 (``2026-05-01T12:00:00Z``, ``2026-05-01``); stored as given."""
    try:
        if len(text) > 40:
            raise ValueError
        datetime.fromisoformat(text)
    except ValueError:
        raise InputError(Problem("--timestamp", None, f"{text[:80]!r} is not an ISO 8601 date-time "
                                 "(e.g. 2026-05-01T12:00:00Z)")) from None
    return text
