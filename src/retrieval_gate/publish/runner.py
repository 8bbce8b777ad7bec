"""The runner's file and log protocols: step outputs (``$GITHUB_OUTPUT``), the job summary
(``$GITHUB_STEP_SUMMARY``) and workflow-command annotations (``::warning``/``::error`` on stdout).

Formatting is pure (``format_output``, ``workflow_command``); :class:`Runner` does the appends.
"""

from __future__ import annotations

import posixpath
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.publish.untrusted import scrub_text
from retrieval_gate.render.escape import escape_controls, escape_terminal

MAX_ANNOTATIONS = 10  # GitHub shows at most 10 warning and 10 error annotations per step


def format_output(name: str, value: str, *, delimiter: str | None = None) -> str:
    """One ``$GITHUB_OUTPUT`` entry in the multiline-safe heredoc form::

        name<<ghadelimiter_<random>
        value
        ghadelimiter_<random>

    The delimiter is random and checked against the value, so no value can end the entry early
    or smuggle in another output."""
    if not name or any(c in name for c in "\r\n=<"):
        raise ValueError(f"bad output name {name!r}")
    delim = delimiter or f"ghadelimiter_{secrets.token_hex(16)}"
    if delim in name or delim in value:
        raise ValueError("output delimiter collides with the output")
    return f"{name}<<{delim}\n{value}\n{delim}\n"


def escape_data(text: str) -> str:
    """Workflow-command message escaping: % → %25, CR → %0D, LF → %0A."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Workflow-command property escaping: as data, plus : → %3A and , → %2C."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: str) -> str:
    """``::command key=value,…::message`` with both parts escaped: GitHub's escapes, and every
    other control character (ESC, bidi overrides…) written visibly (``render.escape.escape_controls``)."""
    props = ",".join(f"{key}={_no_old_form(escape_property(escape_controls(value)))}"
                     for key, value in properties.items() if value)
    data = _no_old_form(escape_data(escape_controls(message, keep_newlines=True)))
    return f"::{command}{' ' + props if props else ''}::{data}"


def _no_old_form(text: str) -> str:
    """The runner's older command form, ``##[command]``, is honoured anywhere in a line."""
    return text.replace("##[", "##%5B")


def normal_path(path: str) -> str:
    """A workspace-relative path as an annotation names it: ``ci/../cases.jsonl`` → ``cases.jsonl``
    (``posixpath.normpath``, without touching the disk); ``./`` dropped."""
    return posixpath.normpath(path.replace("\\", "/")) if path else path


@dataclass
class Runner:
    """Where this run's outputs, summary and annotations go. Files are appended to (other steps
    share them); a missing path (running outside Actions) just skips that channel. ``secrets``
    (the token, ACTIONS_* values, secret header values) are scrubbed from everything it writes."""

    output_file: Path | None = None
    summary_file: Path | None = None
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    annotations: list[str] = field(default_factory=list)
    secrets: tuple[str, ...] = ()
    commands: bool = True  # the forge's ``workflow_commands``: elsewhere annotations are plain log lines
    summary_limit_bytes: int | None = None  # the forge's job summary limit (GitHub: 1 MiB)

    def scrub(self, text: str) -> str:
        return scrub_text(text, secrets=self.secrets)

    def set_outputs(self, outputs: Mapping[str, str]) -> None:
        if self.output_file is None:
            return
        self._append(self.output_file, "".join(format_output(k, self.scrub(v)) for k, v in outputs.items()))

    def append_summary(self, markdown: str) -> bool:
        """Append to the job summary; False (nothing written) when it would exceed the forge's
        limit (GitHub: 1 MiB), so the caller can write a shorter one."""
        if self.summary_file is None:
            return True
        markdown = self.scrub(markdown)
        existing = self.summary_file.stat().st_size if self.summary_file.exists() else 0
        if self.summary_limit_bytes is not None and existing + len(markdown.encode("utf-8")) > self.summary_limit_bytes:
            return False
        self._append(self.summary_file, markdown if markdown.endswith("\n") else markdown + "\n")
        return True

    def annotate(self, level: str, message: str, *, title: str = "retrieval-gate", file: str | None = None,
                 line: int | None = None) -> None:
        """``::warning`` / ``::error`` / ``::notice`` (at ``file``'s ``line`` when given); beyond
        GitHub's 10 per level, a log line escaped as every log line is (``log``)."""
        issued = sum(1 for a in self.annotations if a.startswith(f"::{level}"))
        message, title = self.scrub(message), self.scrub(title)
        file = normal_path(self.scrub(file)) if file else None
        where = {"file": file} if file else {}
        if file and line:
            where["line"] = str(line)
        if issued >= MAX_ANNOTATIONS or not self.commands:  # past GitHub's limit, or a forge without runner commands
            text = f"{level}: {file}:{line}: {message}" if file and line else f"{level}: {message}"
            self.annotations.append(text)
            self.log(text)
            return
        command = workflow_command(level, message, **where, title=title)
        self.annotations.append(command)
        self._write(command)

    def log(self, line: str) -> None:
        """One log line of text that may hold user or PR text: escaped (``render.escape.escape_terminal``),
        so it can neither start a workflow command nor carry a control character."""
        self._write(escape_terminal(self.scrub(line)))

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    @staticmethod
    def _append(path: Path, text: str) -> None:
        try:
            with path.open("a", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
        except OSError as exc:
            raise InputError(Problem(str(path), None, f"cannot append: {exc.strerror}")) from None
