"""``retrieval-gate action``: the GitHub Action entry point (the Docker image's ENTRYPOINT).

It reads the runner's environment once (GITHUB_*, INPUT_*, the event payload), works in the
workspace as the runner does, and runs the flow for the mode. Exit codes: 0 ok, 1 a gate is on
and failed, 2 bad input / API errors, 3 an internal error (a bug). The token never appears in
what it prints: named errors and an internal error's line (and traceback, under ``--debug``)
are scrubbed before they are shown.
"""

from __future__ import annotations

import os

import typer

from retrieval_gate.cli.app import app, report_internal_error
from retrieval_gate.errors import GitHubError, InputError, Problem, RetrievalGateError
from retrieval_gate.publish import engine as engine_module
from retrieval_gate.publish.action_settings import (
    build_action_settings,
    github_token,
    runner_environment,
    workspace_of,
)
from retrieval_gate.publish.flows import run_action
from retrieval_gate.publish.github import GitHubRepo, scrub
from retrieval_gate.publish.runner import Runner


@app.command()
def action() -> None:
    """The GitHub Action entry point: reads the runner's environment (GITHUB_*, INPUT_*)."""
    env = runner_environment()
    token = github_token(env)
    try:
        workspace = workspace_of(env)
        try:
            os.chdir(workspace)
        except OSError as exc:
            raise InputError(Problem(str(workspace), None, f"cannot enter GITHUB_WORKSPACE: {exc.strerror}")) from None
        settings = build_action_settings(env)
        runner = Runner(output_file=settings.output_file, summary_file=settings.summary_file)
        outcome = run_action(
            settings=settings,
            engine=engine_module.real_engine(),
            github=lambda: GitHubRepo(token=settings.token, repository=settings.repository,
                                      api_url=settings.api_url),
            runner=runner,
        )
    except RetrievalGateError as exc:
        raise _scrubbed(exc, token) from None
    except Exception as exc:  # a bug: one line (the traceback under --debug), without the token; exit 3
        raise typer.Exit(report_internal_error(exc, clean=lambda text: scrub(text, [token]))) from None
    raise typer.Exit(outcome.exit_code)


def _scrubbed(exc: RetrievalGateError, token: str) -> RetrievalGateError:
    """The same error, or — if its text holds the token — a GitHubError with the token masked."""
    if not token or token not in str(exc):
        return exc
    if isinstance(exc, InputError):
        return InputError([Problem(p.path, p.line, scrub(p.message, [token])) for p in exc.problems])
    clean = GitHubError(scrub(str(exc), [token]))
    clean.exit_code = exc.exit_code
    return clean
