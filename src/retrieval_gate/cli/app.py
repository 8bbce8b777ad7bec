"""The typer application object and the consoles shared by every command.

Start-up matters (``--help`` and ``validate`` answer in a fraction of a second): this module
imports typer only. ``console`` and ``err_console`` are stand-ins that build the rich Console on
first use, so a command that prints nothing rich never imports rich."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

from retrieval_gate import __version__, release_pin
from retrieval_gate.errors import one_line
from retrieval_gate.lazy import LazyObject

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(
    name="retrieval-gate",
    help="Measure the retrieval step of a RAG system: hit@k, recall@k, nDCG@k per slice, "
    "against a versioned baseline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class LazyConsole(LazyObject):
    """A ``rich.console.Console`` (``render.console.SafeConsole``: user text is never a terminal
    escape nor a workflow command) made on first attribute access; every attribute is the real
    console's (``console.print``, ``console.is_terminal``, passing it to rich renderers)."""

    def __init__(self, **options: Any):
        super().__init__(lambda: _console(**options))


def _console(**options: Any) -> Any:
    from retrieval_gate.render.console import SafeConsole  # every line escaped: render/escape.escape_terminal

    return SafeConsole(**options)


console: Any = LazyConsole(highlight=False)
err_console: Any = LazyConsole(stderr=True, highlight=False)


_PLAIN = {"embedding passages": ("embedded", "passages"), "embedding queries": ("embedded", "queries"),
          "indexing": ("indexed", "chunks")}


class CliProgress:
    """What a command that embeds shows while it works (``eval``, ``embed``, ``init``, ``sweep``):
    a rich progress bar on a terminal; plain ``embedded N/M passages`` lines otherwise (CI logs).
    Both on stderr."""

    def __init__(self, out: Console):
        self.out = out
        self.tty = out.is_terminal
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}

    def step(self, stage: str, done: int, total: int) -> None:
        from retrieval_gate.store.folder import LOCK_STAGE  # here: start-up of every command

        if not self.tty:
            if done > 0 and stage != LOCK_STAGE:  # a wait for the store lock: its notes every 30 s say it
                verb, noun = _PLAIN.get(stage, (stage, "items"))
                self.out.print(f"{verb} {done}/{total} {noun}", markup=False, highlight=False)
            return
        if self._bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeRemainingColumn(), console=getattr(self.out, "real", self.out), transient=True)
            self._bar.start()
        task = self._tasks.get(stage)
        if task is None:
            task = self._tasks[stage] = self._bar.add_task(stage, total=total)
        self._bar.update(task, completed=done, total=total)

    def note(self, message: str) -> None:
        self.out.print(f"note: {message}", markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@dataclass
class DebugSetting:
    """Whether an internal error shows its traceback: ``--debug`` (before the command) or
    ``RETRIEVAL_GATE_DEBUG=1``. The environment variable is read once, in ``cli.main``."""

    on: bool = False


debug = DebugSetting()

INTERNAL_ERROR_EXIT = 3  # a bug in retrieval-gate, never a user's mistake nor a failed gate (1)


def _unchanged(text: str) -> str:
    return text


def report_internal_error(exc: BaseException, *, clean: Callable[[str], str] = _unchanged) -> int:
    """One line for an unexpected exception (the traceback too under ``--debug``), passed
    through ``clean`` (the action masks its token); returns the exit code 3."""
    if debug.on:
        err_console.print(clean(traceback.format_exc()), markup=False, highlight=False, soft_wrap=True)
    message = one_line(exc)
    if len(message) > 200:
        message = message[:200] + "…"
    hint = "" if debug.on else "; rerun with --debug (or RETRIEVAL_GATE_DEBUG=1) for the traceback"
    err_console.print(clean(f"internal error: {type(exc).__name__}: {message}{hint}, please report this bug"),
                      markup=False, highlight=False, soft_wrap=True)
    return INTERNAL_ERROR_EXIT


def version_text() -> str:
    """``retrieval-gate 0.1.0``, and the release commit its workflows pin when the build has one."""
    if release_pin.ACTION_REF is not None:
        label = f"{release_pin.ACTION_VERSION} " if release_pin.ACTION_VERSION else ""
        return f"retrieval-gate {__version__} (release {label}{release_pin.ACTION_REF})"
    return f"retrieval-gate {__version__} (not a release build: no release pin)"


def _version(value: bool) -> None:
    if value:
        print(version_text())
        raise typer.Exit(0)


@app.callback()
def _root(
    debug_flag: bool = typer.Option(False, "--debug", help="Show the traceback of an internal error (exit 3)."),
    _version_flag: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit."),
) -> None:
    """retrieval-gate: measure retrieval on every pull request."""
    if debug_flag:
        debug.on = True


REL_LEVEL_HELP = ("Grade from which a card counts as relevant for hit/recall/precision/MRR/MAP, as trec_eval -l "
                  "(default 1; nDCG always uses the grades as gains).")
JUDGEMENTS_HELP = ("How the golden set was judged: complete (every card that answers is in the gold; a card outside "
                   "it is not relevant, as trec_eval reads it: pass or fail, never needs-labels) or pooled (judged "
                   "from a pool: a card no judgement covers is unjudged). Default: pooled where the golden set "
                   "carries pool provenance (the not-relevant sidecar, cases written by label apply from a "
                   "draft), else complete. Config: judgements.")
MEAN_HELP = ("Which cases each mean covers: relevant (default: cases with a relevant card), trec (as trec_eval: "
             "judged cases in the run) or trec-c (as trec_eval -c: every judged case).")
