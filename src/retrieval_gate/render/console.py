"""The rich console every command prints through: the text of each segment passes
``render.escape.escape_controls`` before rich adds its own styles, and every line written passes
``render.escape.escape_commands``, so user and pull-request text (card ids, titles, queries, file
names, config keys) never reaches a terminal as an escape sequence nor a CI log as a workflow
command, whichever ``print`` wrote it."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from retrieval_gate.render.escape import escape_commands, escape_controls


class SafeConsole(Console):
    """A ``rich.console.Console`` whose output is escaped as ``render.escape.escape_terminal`` says; rich's
    own styles and control segments (a live line's cursor moves) are kept."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        safe = (segment if segment.control
                else Segment(escape_controls(segment.text, keep_newlines=True), segment.style)
                for segment in buffer)
        return escape_commands(super()._render_buffer(safe))
