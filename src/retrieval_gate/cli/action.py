"""``retrieval-gate action``: the GitHub Action entry point (the Docker image's ENTRYPOINT), and
the same in a GitLab pipeline (``GITLAB_CI=true``: ``publish.gitlab_settings``).

It reads the runner's environment once (GITHUB_*, INPUT_*, the event payload; or GitLab's CI_*
variables, translated into the same settings), works in the workspace as the runner does, and runs
the flow for the mode. Exit codes: 0 ok, 1 a gate is on
and failed, 2 bad input / API errors, 3 an internal error (a bug). No secret appears in what it
prints — the token, every ACTIONS_* value, the config's secret header values: named errors and an
internal error's line (and traceback, under ``--debug``)
are scrubbed before they are shown.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import typer

from retrieval_gate.cli.app import app
from retrieval_gate.errors import GitHubError, InputError, InternalError, Problem, ProblemsError, RetrievalGateError
from retrieval_gate.publish.runner import Runner
from retrieval_gate.publish.untrusted import scrub_text


@app.command()
def action() -> None:
    """The CI entry point: reads the runner's environment (GITHUB_*, INPUT_*; in a GitLab job CI_* and
    RETRIEVAL_GATE_GITLAB_TOKEN)."""
    from retrieval_gate.publish import engine as engine_module
    from retrieval_gate.publish.action_settings import (
        build_action_settings,
        github_token,
        runner_environment,
        runner_secrets,
        workspace_of,
    )
    from retrieval_gate.publish.flows import run_action
    from retrieval_gate.publish.gitlab_settings import github_shaped, gitlab_token, on_gitlab, pipeline_url

    env = runner_environment()
    gitlab = on_gitlab(env)
    event = None
    if gitlab:
        event_env, event = github_shaped(env)
        token = gitlab_token(env)  # read once: the settings and the scrubbing below get this one
    else:
        event_env, token = env, github_token(env)
    secrets = runner_secrets(event_env, token=token)
    try:
        workspace = workspace_of(event_env)
        try:
            os.chdir(workspace)
        except OSError as exc:
            raise InputError(Problem(str(workspace), None, f"cannot enter GITHUB_WORKSPACE: {exc.strerror}")) from None
        settings = build_action_settings(event_env, token=token, event=event,
                                         forge="gitlab" if gitlab else "github",
                                         pipeline_url=pipeline_url(env) if gitlab else None)
        secrets = settings.secret_values
        runner = Runner(output_file=settings.output_file, summary_file=settings.summary_file, secrets=tuple(secrets),
                        commands=not gitlab)
        started = time.time()
        outcome = run_action(
            settings=settings,
            engine=engine_module.real_engine(),
            github=_forge(settings),
            runner=runner,
        )
        if not gitlab and env.get("GITHUB_ACTIONS") != "true":
            _say_outside_github(outcome=outcome, out_dir=Path(settings.out_dir), since=started)
    except RetrievalGateError as exc:
        raise _scrubbed(exc, secrets) from None
    except Exception as exc:  # a bug: one line (the traceback under --debug), without the secrets; exit 3
        raise InternalError(clean=lambda text: scrub_text(text, secrets=secrets)) from exc
    raise typer.Exit(outcome.exit_code)


def _forge(settings: Any) -> Any:
    """The factory of the API adapter the flows call: GitHub's, or GitLab's in a GitLab job."""
    if settings.forge == "gitlab":
        from retrieval_gate.publish.gitlab import GitLabProject

        return lambda: GitLabProject(token=settings.token, project=settings.repository, api_url=settings.api_url)
    from retrieval_gate.publish.github import GitHubRepo

    return lambda: GitHubRepo(token=settings.token, repository=settings.repository, api_url=settings.api_url)


def _say_outside_github(*, outcome: Any, out_dir: Path, since: float) -> None:
    """Outside a runner (GITHUB_ACTIONS unset) the run is easy to mistake for a no-op: one line
    saying so, and every file it wrote."""
    wrote = sorted(p.as_posix() for p in out_dir.rglob("*") if p.is_file() and p.stat().st_mtime >= since - 1)
    mode = getattr(outcome, "mode", None) or "?"
    typer.echo(f"retrieval-gate action: not on GitHub Actions (GITHUB_ACTIONS is not 'true'); ran mode {mode} in "
               f"{Path.cwd()}; wrote {', '.join(wrote) if wrote else 'nothing'}", err=True)


def _scrubbed(exc: RetrievalGateError, secrets: list[str]) -> RetrievalGateError:
    """The same error, or — if its text holds a secret — a GitHubError with the secrets masked."""
    text = str(exc)
    if scrub_text(text, secrets=secrets) == text:
        return exc
    if isinstance(exc, ProblemsError):
        return type(exc)([Problem(scrub_text(p.path, secrets=secrets), p.line, scrub_text(p.message, secrets=secrets))
                           for p in exc.problems])
    clean = GitHubError(scrub_text(text, secrets=secrets))
    clean.exit_code = exc.exit_code
    return clean
