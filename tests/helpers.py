"""Helpers shared by the tests: write input files, collect a loader's problems, run the CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.errors import InputError, Problem


def write_lines(path: Path, *lines: str | bytes) -> Path:
    """Each line (text or raw bytes) followed by a newline; parent folders made as needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join((ln if isinstance(ln, bytes) else ln.encode()) + b"\n" for ln in lines))
    return path


def problems_of(load: Callable[[Path], object], path: Path) -> list[Problem]:
    """The problems a loader reports for ``path`` (it must refuse it)."""
    with pytest.raises(InputError) as info:
        load(path)
    return list(info.value.problems)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``retrieval-gate ARGS`` in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err
