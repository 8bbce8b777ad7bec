"""The baseline file and its KB manifest (adapter): read as bytes → text →
``baseline.codec.parse_baseline``; written as ``baseline_text``'s stable text, atomically."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrieval_gate.baseline.codec import baseline_data, parse_baseline
from retrieval_gate.baseline.model import Baseline
from retrieval_gate.errors import BaselineError
from retrieval_gate.files import ReadRefused, decode_text, read_bounded, write_text_atomic
from retrieval_gate.load import boundary
from retrieval_gate.score.kb_manifest import KbCard, dumps_manifest, manifest_path, parse_manifest


def _read_text(path: Path, *, what: str, missing: str | None) -> str | None:
    """A file of the tool's as text, read once: at most ``MAX_FILE_BYTES`` (a file cut at the cap
    says so, before any decoding), then UTF-8. ``missing``: the message for an absent file (None:
    an absent file is None)."""
    try:
        return decode_text(read_bounded(path, max_bytes=boundary.MAX_FILE_BYTES))
    except ReadRefused as exc:
        if exc.missing:
            if missing is None:
                return None
            raise BaselineError(f"{path}: {missing}") from None
        if exc.reason.startswith("is a directory"):
            raise BaselineError(f"{path}: is a directory, expected a {what} JSON file") from None
        if exc.reason.startswith("cannot read"):
            raise BaselineError(f"{path}: {exc.reason}") from None
        raise BaselineError(f"{path}: not a {what}: {exc.reason}") from None


def read_baseline(path: Path) -> Baseline:
    path = Path(path)
    text = _read_text(path, what="baseline", missing="baseline not found")
    assert text is not None  # an absent baseline raised
    return baseline_from_text(text, source=str(path))


def baseline_from_text(text: str, *, source: str) -> Baseline:
    """A baseline's text — read from disk here, or from the base through the API in the action —
    through the input limits (``check_json_limits``), then parsed (and migrated)."""
    check_json_limits(text, source=source, what="baseline")
    return parse_baseline(text, source=source)


def check_json_limits(text: str, *, source: str, what: str) -> None:
    """The input boundary's limits (``load/boundary``: size, depth, finite numbers and integers of
    at most 100 digits, duplicate keys, UTF-8 strings) on the text of a baseline or a KB manifest —
    read from disk here, or from the base through the API in the action: a BaselineError naming
    ``source`` (and the line) when outside them. A syntax error is left to the parser, which names it."""
    if len(text) > boundary.MAX_FILE_BYTES:
        raise BaselineError(f"{source}: not a {what}: larger than {boundary.MAX_FILE_BYTES:,} bytes")
    try:
        boundary.loads(text)
    except boundary.JsonRefused as exc:
        where = boundary.line_of(text, needle=exc.needle)
        raise BaselineError(f"{source}{f':{where}' if where else ''}: not a {what}: {exc.message}") from None
    except json.JSONDecodeError:
        pass


def _json(value: Any, **kwargs: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False, **kwargs)


def baseline_text(baseline: Baseline) -> str:
    """A baseline's one text form — what ``write_baseline`` writes and what the action commits
    through the API. Stable: sorted keys, two-space indent, one line per case (small, line-wise diffs in
    git), per-case scores rounded to 6 decimals as a list aligned with ``score_keys``, the
    case's ranking after them, trailing newline."""
    data = baseline_data(baseline)
    lines = ["{"]
    items = sorted(data.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key == "cases" and value:
            lines.append('  "cases": {')
            cases = sorted(value.items())
            for j, (case_id, case) in enumerate(cases):
                sep = "," if j < len(cases) - 1 else ""
                lines.append(f"    {_json(case_id)}: {_json(case, separators=(', ', ': '))}{sep}")
            lines.append("  }" + comma)
        else:
            body = _json(value, indent=2).replace("\n", "\n  ")
            lines.append(f"  {_json(key)}: {body}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_baseline(path: Path, baseline: Baseline) -> None:
    """``baseline_text``, written atomically."""
    write_text_atomic(Path(path), text=baseline_text(baseline))


def read_kb_manifest(baseline_path: Path) -> dict[str, KbCard] | None:
    """The KB manifest beside a baseline (``<suite>.kb.json``), or None when there is none (a
    baseline written before manifests, or from a run without a KB)."""
    path = Path(manifest_path(str(baseline_path)))
    text = _read_text(path, what="KB manifest", missing=None)
    return None if text is None else manifest_from_text(text, source=str(path))


def manifest_from_text(text: str, *, source: str) -> dict[str, KbCard]:
    """A KB manifest's text — read from disk here, or from the base through the API in the action —
    through the input limits (``check_json_limits``), then parsed."""
    check_json_limits(text, source=source, what="KB manifest")
    return parse_manifest(text, source=source)


def kb_manifest_text(cards: Mapping[str, KbCard], *, suite: str) -> str:
    """A KB manifest's stable text (``score.kb_manifest.dumps_manifest``): what ``write_kb_manifest``
    writes and what the action commits beside the baseline."""
    return dumps_manifest(cards, suite=suite)


def write_kb_manifest(baseline_path: Path, cards: Mapping[str, KbCard], *, suite: str) -> Path:
    """The KB manifest beside a baseline (``kb_manifest_text``), atomically; returns its path."""
    path = Path(manifest_path(str(baseline_path)))
    write_text_atomic(path, text=kb_manifest_text(cards, suite=suite))
    return path
