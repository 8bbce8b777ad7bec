"""Output paths checked against the inputs of one command: an ``--out`` that resolves to an
input (the same file, a hard link to it, or a path inside an input folder) is refused before
anything is read, so a typo never overwrites the golden set."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from retrieval_gate.errors import InputError, Problem


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def refuse_output_onto_inputs(*, outputs: Mapping[str, Path | None], inputs: Mapping[str, Path | None]) -> None:
    """Raise InputError (exit 2) naming the output and the input it would overwrite."""
    problems = []
    for out_flag, out in outputs.items():
        if out is None:
            continue
        out_real = Path(os.path.realpath(out))
        for in_flag, source in inputs.items():
            if source is None or not os.path.exists(source):
                continue
            source_real = Path(os.path.realpath(source))
            same = _inside(out_real, source_real) if source_real.is_dir() else out_real == source_real
            if not same and out_real.exists() and not source_real.is_dir():
                try:
                    same = os.path.samefile(out_real, source_real)
                except OSError:
                    same = False
            if same:
                where = "is inside the input folder" if source_real.is_dir() else "is the input"
                problems.append(Problem(str(out), None, f"{out_flag} {where} {in_flag} {source}: "
                                                        "refusing to overwrite an input"))
    if problems:
        raise InputError(problems)
