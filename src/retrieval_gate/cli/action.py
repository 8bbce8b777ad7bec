"""``retrieval-gate action``: the GitHub Action entry point (the Docker image's ENTRYPOINT).

It reads the runner's environment once (GITHUB_*, INPUT_*, the event payload), works in the
workspace as the runner does, and runs the flow for the mode. Exit codes: 0 ok, 1 a gate is on
and failed, 2 bad input / API errors. The token never appears in what it prints: named errors
and any unexpected traceback are scrubbed before they are shown.
"""

from __future__ import annotations

import os
import traceback

import typer

from retrieval_gate.cli.app import app, err_console
from retrieval_gate.errors import GitHubError, InputError, Problem, RetrievalGateError


@app.command()
def action() -> None:
    """The GitHub Action entry point: reads the runner's environment (GITHUB_*, INPUT_*)."""
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
    except Exception:  # a bug: show it, without the token
        err_console.print(scrub(traceback.format_exc(), [token]), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    raise typer.Exit(outcome.exit_code)


def _scrubbed(exc: RetrievalGateError, token: str) -> RetrievalGateError:
    """The same error, or — if its text holds the token — a GitHubError with the token masked."""
    from retrieval_gate.publish.github import scrub

    if not token or token not in str(exc):
        return exc
    if isinstance(exc, InputError):
        return InputError([Problem(p.path, p.line, scrub(p.message, [token])) for p in exc.problems])
    clean = GitHubError(scrub(str(exc), [token]))
    clean.exit_code = exc.exit_code
    return clean
