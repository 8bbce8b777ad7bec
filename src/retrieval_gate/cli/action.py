"""``retrieval-gate action``: the CI entry point — the GitHub Action's (the Docker image's
ENTRYPOINT), and the same command in a GitLab, Azure DevOps or Gitea / Forgejo pipeline (``forge.FORGES``).

It reads the runner's environment once, asks the registry which forge this is
(``forge.detect_forge``), reads that forge's tokens once, works in the workspace as the runner
does, and runs the flow for the mode against the forge's API. Exit codes: 0 ok, 1 a gate is on
and failed, 2 bad input / API errors, 3 an internal error (a bug). No secret appears in what it
prints — the tokens, the forge's secret variables, the config's secret header values: named errors and an
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
from retrieval_gate.errors import ForgeError, InputError, InternalError, Problem, ProblemsError, RetrievalGateError
from retrieval_gate.publish.runner import Runner
from retrieval_gate.publish.untrusted import scrub_text


@app.command()
def action() -> None:
    """The CI entry point: reads the runner's environment (GitHub: GITHUB_*, INPUT_*; GitLab: CI_*,
    RETRIEVAL_GATE_GITLAB_*; Azure DevOps: BUILD_*, SYSTEM_*; Gitea / Forgejo: GITEA_ACTIONS or
    FORGEJO_ACTIONS, GITHUB_*, RETRIEVAL_GATE_GITEA_*)."""
    from retrieval_gate.forge import detect_forge
    from retrieval_gate.publish import engine as engine_module
    from retrieval_gate.publish.action_settings import build_action_settings, runner_environment, runner_secrets
    from retrieval_gate.publish.flows import run_action

    env = runner_environment()
    forge = detect_forge(env)
    tokens = forge.read_tokens(env)  # read once: the settings and the scrubbing below get these
    secrets = runner_secrets(env, forge=forge, tokens=tokens)
    try:
        workspace = forge.workspace(env)
        try:
            os.chdir(workspace)
        except OSError as exc:
            raise InputError(Problem(str(workspace), None, f"cannot enter the workspace: {exc.strerror}")) from None
        settings = build_action_settings(env, forge=forge, tokens=tokens)
        secrets = settings.secret_values
        place = settings.place
        runner = Runner(output_file=place.output_file, summary_file=place.summary_file, secrets=tuple(secrets),
                        commands=forge.workflow_commands, summary_limit_bytes=forge.limits.summary_bytes)

        def clean(text: str) -> str:
            return scrub_text(text, secrets=secrets)

        started = time.time()
        outcome = run_action(
            settings=settings,
            engine=engine_module.real_engine(),
            forge_api=lambda: forge.api(place, scrub=clean, log=runner.log),
            runner=runner,
        )
        if (note := forge.outside_note(env)) is not None:
            _say_outside(note, outcome=outcome, out_dir=Path(settings.out_dir), since=started)
    except RetrievalGateError as exc:
        raise _scrubbed(exc, secrets) from None
    except Exception as exc:  # a bug: one line (the traceback under --debug), without the secrets; exit 3
        raise InternalError(clean=lambda text: scrub_text(text, secrets=secrets)) from exc
    raise typer.Exit(outcome.exit_code)


def _say_outside(note: str, *, outcome: Any, out_dir: Path, since: float) -> None:
    """Outside a runner the run is easy to mistake for a no-op: one line saying so, and every file it wrote."""
    wrote = sorted(p.as_posix() for p in out_dir.rglob("*") if p.is_file() and p.stat().st_mtime >= since - 1)
    mode = getattr(outcome, "mode", None) or "?"
    typer.echo(f"retrieval-gate action: {note}; ran mode {mode} in "
               f"{Path.cwd()}; wrote {', '.join(wrote) if wrote else 'nothing'}", err=True)


def _scrubbed(exc: RetrievalGateError, secrets: list[str]) -> RetrievalGateError:
    """The same error, or — if its text holds a secret — a ForgeError with the secrets masked."""
    text = str(exc)
    if scrub_text(text, secrets=secrets) == text:
        return exc
    if isinstance(exc, ProblemsError):
        return type(exc)([Problem(scrub_text(p.path, secrets=secrets), p.line, scrub_text(p.message, secrets=secrets))
                           for p in exc.problems])
    clean = ForgeError(scrub_text(text, secrets=secrets))
    clean.exit_code = exc.exit_code
    return clean
