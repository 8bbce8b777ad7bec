"""``retrieval-gate history``: the history site of the suites' baselines, built from git alone
(docs/history.md)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.errors import UsageError
from retrieval_gate.files import dumps_json, write_text_atomic

if TYPE_CHECKING:
    from retrieval_gate.artifacts.git_history import Deadline

HISTORY_RESAMPLES = 2_000  # sign flips per continuous step (hit@k's exact sign test needs none)


def _since(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise UsageError(f"--since {value!r}: expected a date, YYYY-MM-DD") from None


def suite_paths(*, config: Path | None, suite: str | None, repo: Path, deadline: Deadline) -> list[tuple[str, str]]:
    """``[(suite, baseline path)]``: the one asked for, or every suite of the config file and every
    ``baselines/<suite>.json`` at HEAD."""
    from retrieval_gate.artifacts.git_history import tracked_baselines
    from retrieval_gate.settings import DEFAULT_BASELINE_DIR, default_baseline_path, load_config

    loaded, _ = load_config(config)
    if suite is not None:
        configured = loaded.suites[suite].baseline if suite in loaded.suites else None
        return [(suite, str(default_baseline_path(configured=configured, suite=suite, results_suite=None)))]
    found = {name: str(default_baseline_path(configured=s.baseline, suite=name, results_suite=None))
             for name, s in loaded.suites.items()}
    for path in tracked_baselines(repo, folder=DEFAULT_BASELINE_DIR, deadline=deadline):
        name = Path(path).name[:-len(".json")]
        found.setdefault(name, path)
    return sorted(found.items())


def _questions(config: Path | None, suite: str) -> dict[str, str]:
    """Each case's question in the suite's golden set as the checkout holds it (shown with its id
    on the page); {} when the config names none or it cannot be read (the page shows the ids)."""
    from retrieval_gate.errors import RetrievalGateError
    from retrieval_gate.load.cases import read_cases
    from retrieval_gate.settings import load_config

    try:
        loaded, path = load_config(config)
    except RetrievalGateError:
        return {}
    cases = loaded.suites[suite].cases if suite in loaded.suites else None
    if not cases:
        return {}
    where = Path(cases) if Path(cases).is_absolute() or path is None else Path(path).parent / cases
    case_set, _problems = read_cases(where)
    return {c.id: c.query for c in case_set.cases if c.query} if case_set is not None else {}


@app.command("history")
def history_command(
    out: Path = typer.Option(..., "--out", help="Folder to write the site into: index.html, <suite>.html, <suite>.json, badge-<suite>.svg."),
    suite: str | None = typer.Option(None, "--suite", help="One suite (default: --all)."),
    every: bool = typer.Option(False, "--all", help="Every suite: the config file's, and every baselines/<suite>.json at HEAD (the default)."),
    since: str | None = typer.Option(None, "--since", help="Only versions committed on or after this date (YYYY-MM-DD)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the last N versions of each baseline."),
    config: Path | None = typer.Option(None, "--config", help="Config file naming the suites and their baselines (default ./retrieval-gate.yml when present)."),
) -> None:
    """Read every committed version of each suite's baseline from git (renames followed) and
    write the history site: each refresh's headline with its interval, the paired step from the
    refresh before with its test, what changed (settings, KB cards, golden set), flaky cases,
    cases lost and not recovered, and a badge. Run it in the repository, with its whole history
    (a shallow clone is exit 2). Exit 0; 2 on bad input or an unreadable repository."""
    from retrieval_gate.artifacts.git_history import (
        DEADLINE_S,
        Deadline,
        baseline_history,
        check_repository,
        remote_url,
    )
    from retrieval_gate.compare.gate import GateSettings
    from retrieval_gate.forge import pull_page
    from retrieval_gate.history.build import build_history
    from retrieval_gate.render.badge import badge_svg
    from retrieval_gate.render.history_page import render_index, render_suite_page

    if suite is not None and every:
        raise UsageError("--suite and --all: give one")
    cutoff = _since(since)
    repo = Path.cwd()
    deadline = Deadline(DEADLINE_S)
    check_repository(repo, deadline=deadline)
    suites = suite_paths(config=config, suite=suite, repo=repo, deadline=deadline)
    alpha = GateSettings().alpha
    page = pull_page(remote_url(repo, deadline=deadline))
    histories = []
    for name, path in suites:
        _commits, versions = baseline_history(repo, path=path, since=cutoff, limit=limit, deadline=deadline)
        histories.append(build_history(versions, suite=name, alpha=alpha, resamples=HISTORY_RESAMPLES,
                                       pull_page=page))
    out.mkdir(parents=True, exist_ok=True)
    names = [h.suite for h in histories]
    for h in histories:
        write_text_atomic(out / f"{h.suite}.json", text=dumps_json(h.model_dump(mode="json")))
        write_text_atomic(out / f"{h.suite}.html",
                          text=render_suite_page(h, suites=names, questions=_questions(config, h.suite)))
        write_text_atomic(out / f"badge-{h.suite}.svg", text=badge_svg(h))
        console.print(f"{h.suite}: {len(h.points)} refreshes, {len(h.gaps)} gaps, {len(h.flaky)} flaky, "
                      f"{len(h.lost)} lost → {out / (h.suite + '.html')}")
    write_text_atomic(out / "index.html", text=render_index(histories))
