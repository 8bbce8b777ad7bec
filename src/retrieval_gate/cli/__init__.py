"""The shell: the ``retrieval-gate`` console script. Parses flags, calls the core, turns named
errors into messages and exit codes (0 ok, 1 gate failed, 2 bad input or usage, 3 an internal
error — a bug, reported in one line; the traceback only under ``--debug`` or
``RETRIEVAL_GATE_DEBUG=1``, which is read here, once per run)."""

from __future__ import annotations

import io
import os
import sys
import traceback
from importlib import import_module
from typing import Any

import typer

from retrieval_gate.cli.app import app, debug, err_console, report_internal_error
from retrieval_gate.environment import (
    debug_requested,
    no_framework_telemetry,
    read_environment,
    skip_pydantic_plugins,
)
from retrieval_gate.errors import InternalError, ProblemsError, RetrievalGateError
from retrieval_gate.lazy import LazyModule
from retrieval_gate.render.escape import escape_terminal

# Each command lives in its own module, which registers it on ``app`` when imported. ``main``
# imports only the module of the command it was asked for (start-up: typer reads the signature of
# every registered command on each run); help, no command or an unknown one imports them all, so
# the listing and "No such command" suggestions are complete. Listed in the order help shows them.
COMMAND_MODULES = {
    "init": "init",
    "score": "score",
    "validate": "validate",
    "eval": "eval",
    "embed": "embed",
    "baseline": "baseline",
    "compare": "compare",
    "action": "action",
    "report": "report",
    "audit": "audit",
    "cases": "cases",
    "label": "label",
    "subset": "subset",
    "sweep": "sweep",
    "history": "history",
}
ROOT_FLAGS = frozenset({"--debug", "--version"})  # the root callback's options (none takes a value)


def register_commands(argv: list[str]) -> None:
    """Import the command module(s) ``argv`` needs; registered commands keep the listed order."""
    word = next((arg for arg in argv if arg not in ROOT_FLAGS), None)
    if word is None and "--version" in argv:  # answered by the root callback: no command needed
        return
    wanted = [COMMAND_MODULES[word]] if word in COMMAND_MODULES else list(COMMAND_MODULES.values())
    for module in wanted:
        import_module(f"retrieval_gate.cli.{module}")
    order = list(COMMAND_MODULES)
    app.registered_commands.sort(key=lambda info: order.index(info.name or info.callback.__name__))


MAX_PROBLEMS_SHOWN = 50  # a wrong file (a results JSON passed as a run) is not 5,000 lines of errors


# ``click``, imported only when an exception reaches ``main``'s handlers: typer ≥ 0.25 vendors
# its own copy, so a run that goes well never pays for importing click (start-up).
click: Any = LazyModule("click")


def main(argv: list[str] | None = None) -> None:
    """Entry point. Never shows a traceback for a user mistake."""
    debug.on = debug_requested(read_environment())
    skip_pydantic_plugins()
    no_framework_telemetry()
    register_commands(sys.argv[1:] if argv is None else list(argv))
    try:
        # With standalone_mode=False click *returns* a typer.Exit's code instead of exiting.
        code = app(args=argv, standalone_mode=False)
    except RetrievalGateError as exc:
        _report(exc)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (click.ClickException, typer.TyperException) as exc:
        # typer ≥ 0.25 vendors click (typer._click): its usage errors are TyperExceptions. They
        # quote the arguments given: printed through the escaping console like everything else.
        shown_text = io.StringIO()
        exc.show(file=shown_text)
        err_console.print(shown_text.getvalue(), markup=False, highlight=False, soft_wrap=True, end="")
        sys.exit(2)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("aborted")
        sys.exit(130)
    except PermissionError as exc:  # an input, output, store or cache this user may not touch
        err_console.print(f"error: {_permission_line(exc)}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except InternalError as exc:  # a bug the action caught, with how to mask its secrets
        sys.exit(report_internal_error(exc.__cause__ or exc, clean=exc.clean))
    except Exception as exc:  # the last resort: a bug, one line and exit 3 (never 1, a failed gate)
        sys.exit(report_internal_error(exc))
    except BaseException as exc:
        # A Rust panic inside chromadb (pyo3's PanicException) derives from BaseException: it is a
        # store failure (exit 2, one line), never a failed gate (1) and never a traceback.
        if type(exc).__name__ != "PanicException":
            raise
        sys.exit(report_store_panic(exc))
    sys.exit(code if isinstance(code, int) else 0)


def _permission_line(exc: PermissionError) -> str:
    where = exc.filename if exc.filename is not None else "a file"
    return (f"{where}: permission denied for this user (uid {os.getuid()}): fix its owner or mode "
            "(chown/chmod), or pass another path")


def report_store_panic(exc: BaseException) -> int:
    """One line for a panic of chromadb's Rust core that reached the top (the store adapter turns
    the ones it sees into a rebuild); the traceback only under ``--debug``."""
    if debug.on:
        err_console.print(traceback.format_exc(), markup=False, highlight=False, soft_wrap=True)
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else "no message"
    err_console.print(f"error: the Chroma store failed (a panic in chromadb: {message}); delete the store folder "
                      "(.retrieval-gate/store, or the one --store names) to rebuild it", markup=False,
                      highlight=False, soft_wrap=True)
    return 2


def _report(exc: RetrievalGateError) -> None:
    if isinstance(exc, ProblemsError):  # bad input, or an output that could not be written
        for problem in exc.problems[:MAX_PROBLEMS_SHOWN]:  # one line each, whatever a file name holds
            err_console.print(f"error: {escape_terminal(problem)}", markup=False, highlight=False, soft_wrap=True)
        if len(exc.problems) > MAX_PROBLEMS_SHOWN:
            err_console.print(f"… and {len(exc.problems) - MAX_PROBLEMS_SHOWN} more", markup=False, highlight=False)
        if len(exc.problems) > 1:
            err_console.print(f"{len(exc.problems)} problems", markup=False, highlight=False)
    else:
        err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
