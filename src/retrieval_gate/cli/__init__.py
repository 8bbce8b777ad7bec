"""The shell: the ``retrieval-gate`` console script. Parses flags, calls the core, turns named
errors into messages and exit codes (0 ok, 1 gate failed, 2 bad input or usage, 3 an internal
error — a bug, reported in one line; the traceback only under ``--debug`` or
``RETRIEVAL_GATE_DEBUG=1``, which is read here, once per run)."""

from __future__ import annotations

import sys
from typing import Any

import typer

from retrieval_gate.cli.app import app, debug, err_console, report_internal_error
from retrieval_gate.environment import debug_requested, read_environment
from retrieval_gate.errors import InputError, RetrievalGateError

# Each command lives in its own module and registers itself on ``app``.
from retrieval_gate.cli import score as _score  # noqa: F401  isort: skip
from retrieval_gate.cli import validate as _validate  # noqa: F401  isort: skip
from retrieval_gate.cli import eval as _eval  # noqa: F401  isort: skip
from retrieval_gate.cli import embed as _embed  # noqa: F401  isort: skip
from retrieval_gate.cli import baseline as _baseline  # noqa: F401  isort: skip
from retrieval_gate.cli import compare as _compare  # noqa: F401  isort: skip
from retrieval_gate.cli import action as _action  # noqa: F401  isort: skip
from retrieval_gate.cli import report as _report_cmd  # noqa: F401  isort: skip
from retrieval_gate.cli import audit as _audit  # noqa: F401  isort: skip  (issue 14)
from retrieval_gate.cli import subset as _subset  # noqa: F401  isort: skip  (issue 14)


MAX_PROBLEMS_SHOWN = 50  # a wrong file (a results JSON passed as a run) is not 5,000 lines of errors


class _LazyClick:
    """``click``, imported only when an exception reaches ``main``'s handlers: typer ≥ 0.25
    vendors its own copy, so a run that goes well never pays for importing click (start-up)."""

    def __getattr__(self, name: str) -> Any:
        import click as real

        return getattr(real, name)


click: Any = _LazyClick()


def main(argv: list[str] | None = None) -> None:
    """Entry point. Never shows a traceback for a user mistake."""
    debug.on = debug_requested(read_environment())
    try:
        # With standalone_mode=False click *returns* a typer.Exit's code instead of exiting.
        code = app(args=argv, standalone_mode=False)
    except RetrievalGateError as exc:
        _report(exc)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (click.ClickException, typer.TyperException) as exc:
        # typer ≥ 0.25 vendors click (typer._click): its usage errors are TyperExceptions.
        exc.show(file=sys.stderr)
        sys.exit(2)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:  # the last resort: a bug, one line and exit 3 (never 1, a failed gate)
        sys.exit(report_internal_error(exc))
    sys.exit(code if isinstance(code, int) else 0)


def _report(exc: RetrievalGateError) -> None:
    if isinstance(exc, InputError):
        for problem in exc.problems[:MAX_PROBLEMS_SHOWN]:
            err_console.print(f"error: {problem}", markup=False, highlight=False, soft_wrap=True)
        if len(exc.problems) > MAX_PROBLEMS_SHOWN:
            err_console.print(f"… and {len(exc.problems) - MAX_PROBLEMS_SHOWN} more", markup=False, highlight=False)
        if len(exc.problems) > 1:
            err_console.print(f"{len(exc.problems)} problems", markup=False, highlight=False)
    else:
        err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
