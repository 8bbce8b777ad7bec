"""Reading a baseline file (adapter): bytes → text → ``compare.baseline_codec.parse_baseline``."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval_gate.compare.baseline_codec import parse_baseline
from retrieval_gate.compare.kb_diff import manifest_path, parse_manifest
from retrieval_gate.compare.model import Baseline
from retrieval_gate.errors import BaselineError
from retrieval_gate.load import boundary
from retrieval_gate.score.kb_manifest import KbCard


def read_baseline(path: Path) -> Baseline:
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(boundary.MAX_FILE_BYTES + 1)
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
    if len(raw) > boundary.MAX_FILE_BYTES:
        raise BaselineError(f"{path}: not a baseline: larger than {boundary.MAX_FILE_BYTES:,} bytes")
    try:  # the input boundary's limits (depth, finite numbers, duplicate keys, UTF-8 strings)
        boundary.loads(text)
    except boundary.JsonRefused as exc:
        where = boundary.line_of(text, exc.needle)
        raise BaselineError(f"{path}{f':{where}' if where else ''}: not a baseline: {exc.message}") from None
    except json.JSONDecodeError:
        pass  # parse_baseline names the syntax error
    return parse_baseline(text, source=str(path))


def read_kb_manifest(baseline_path: Path) -> dict[str, KbCard] | None:
    """The KB manifest beside a baseline (``<suite>.kb.json``), or None when there is none (a
    baseline written before manifests, or from a run without a KB)."""
    path = Path(manifest_path(str(baseline_path)))
    try:
        with open(path, "rb") as handle:
            raw = handle.read(boundary.MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > boundary.MAX_FILE_BYTES:
        raise BaselineError(f"{path}: not a KB manifest: larger than {boundary.MAX_FILE_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: not a KB manifest: invalid UTF-8 at byte {exc.start + 1}") from None
    return parse_manifest(text, source=str(path))
