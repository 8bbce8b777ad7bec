"""The typer application object and the consoles shared by every command.

Start-up matters (``--help`` and ``validate`` answer in a fraction of a second): this module
imports typer only. ``console`` and ``err_console`` are stand-ins that build the rich Console on
first use, so a command that prints nothing rich never imports rich."""

from __future__ import annotations

from typing import Any

import typer

app = typer.Typer(
    name="retrieval-gate",
    help="Measure the retrieval step of a RAG system: hit@k, recall@k, nDCG@k per slice, "
    "against a versioned baseline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class LazyConsole:
    """A ``rich.console.Console`` made on first attribute access; every attribute is the real
    console's (``console.print``, ``console.is_terminal``, passing it to rich renderers)."""

    def __init__(self, **options: Any):
        self._options = options
        self._real: Any = None

    @property
    def real(self) -> Any:
        if self._real is None:
            from rich.console import Console

            self._real = Console(**self._options)
        return self._real

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real, name)


console: Any = LazyConsole(highlight=False)
err_console: Any = LazyConsole(stderr=True, highlight=False)


@app.callback()
def _root() -> None:
    """retrieval-gate: measure retrieval on every pull request."""
