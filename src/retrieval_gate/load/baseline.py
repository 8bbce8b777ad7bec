"""Reading a baseline file (adapter): bytes → text → ``compare.baseline_codec.parse_baseline``."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.compare.baseline_codec import parse_baseline
from retrieval_gate.compare.model import Baseline
from retrieval_gate.errors import BaselineError


def read_baseline(path: Path) -> Baseline:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline not found") from None
    except IsADirectoryError:
        raise BaselineError(f"{path}: is a directory, expected a baseline JSON file") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: not a baseline: invalid UTF-8 at byte {exc.start + 1}") from None
    return parse_baseline(text, source=str(path))
