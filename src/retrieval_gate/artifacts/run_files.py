"""The results, comparison and audit files (adapter): each one's text (``*_text``: stable JSON,
what the action writes through its scrubbing context), its atomic write (``write_*``, the CLI) and
its reader (``read_*`` from disk, ``parse_*`` from bytes the caller read), for the steps after
scoring: compare, baseline update, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import ReadRefused, decode_text, dumps_json, write_text_atomic
from retrieval_gate.load import boundary
from retrieval_gate.load.textfile import display, read_bytes, validation_problems
from retrieval_gate.score.results import RESULTS_SCHEMA_VERSION, Results

if TYPE_CHECKING:  # read where they are parsed: an eval, which writes results only, imports neither
    from retrieval_gate.audit import AuditReport
    from retrieval_gate.compare.model import Comparison


def json_document(raw: bytes, *, source: Path) -> Any:
    """A whole JSON file's bytes → data, through the input boundary (``load/boundary.py``); every
    refusal names the file (and the line where there is one)."""
    text = ""
    try:
        text = decode_text(raw)
        return boundary.loads(text)
    except ReadRefused as exc:
        raise InputError(Problem(display(source), None, exc.reason)) from None
    except json.JSONDecodeError as exc:
        raise InputError(Problem(display(source), exc.lineno,
                                 f"JSON syntax error: {exc.msg} (column {exc.colno})")) from None
    except boundary.JsonRefused as exc:
        raise InputError(Problem(display(source), boundary.line_of(text, needle=exc.needle), exc.message)) from None


def results_text(results: Results) -> str:
    """The results file's text (stable JSON)."""
    return dumps_json(results.to_json_data())


def write_results(path: Path, *, results: Results) -> None:
    """``results_text``, written atomically."""
    write_text_atomic(Path(path), text=results_text(results))


def comparison_text(comparison: Comparison) -> str:
    """The comparison file's text (stable JSON)."""
    return dumps_json(comparison.model_dump(mode="json"))


def write_comparison(path: Path, *, comparison: Comparison) -> None:
    """``comparison_text``, written atomically."""
    write_text_atomic(Path(path), text=comparison_text(comparison))


def audit_text(report: AuditReport) -> str:
    """The audit file's text: sorted keys, two-space indent, a trailing newline. It holds no time,
    path or timing, so the same inputs give the same bytes (what lets a refresh skip an unchanged
    ``baselines/<suite>.audit.json``)."""
    return dumps_json(report.to_json_data())


def write_audit(path: Path, *, report: AuditReport) -> None:
    """``audit_text``, written atomically."""
    write_text_atomic(Path(path), text=audit_text(report))


def read_results(path: Path) -> Results:
    """Load and validate a results JSON file; every problem is named with the file."""
    path = Path(path)
    return parse_results(read_bytes(path), source=path)


def parse_results(raw: bytes, *, source: Path) -> Results:
    """Validate a results file's bytes (read by the caller: ``read_results``, or the action's
    confined reader in its privileged modes); ``source`` names the file in errors."""
    path = source
    data = json_document(raw, source=path)
    if not isinstance(data, dict):
        raise InputError(Problem(display(path), None, "not a results file: expected a JSON object"))
    version = data.get("schema_version")
    if isinstance(data.get("cases"), dict) and "history" in data:
        raise InputError(Problem(display(path), None,
                                 "this is a baseline file, not a results file (pass it as --baseline)"))
    if isinstance(version, int) and not isinstance(version, bool) and version > RESULTS_SCHEMA_VERSION:
        raise InputError(Problem(display(path), None, f"results schema_version {version} is newer than "
                                 f"this tool reads ({RESULTS_SCHEMA_VERSION}); upgrade retrieval-gate"))
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(path, line=0, exc=exc)
        raise InputError([Problem(p.path, None, f"not a valid results file: {p.message}")
                          for p in problems[:5]]) from None


def read_comparison(path: Path) -> Comparison:
    """Load and validate a comparison JSON file (written by ``compare --out``)."""
    path = Path(path)
    return parse_comparison(read_bytes(path), source=path)


def parse_comparison(raw: bytes, *, source: Path) -> Comparison:
    """Validate a comparison file's bytes; ``source`` names the file in errors."""
    from retrieval_gate.compare.model import Comparison

    path = source
    data = json_document(raw, source=path)
    try:
        return Comparison.model_validate(data)
    except ValidationError as exc:
        raise InputError(Problem(str(path), None,
                                 f"not a comparison file (from `compare --out`): {_first_error(exc)}")) from None


def read_audit(path: Path) -> AuditReport:
    """Load and validate an ``audit.json`` (written by ``retrieval-gate audit`` or a refresh)."""
    path = Path(path)
    return parse_audit(read_bytes(path), source=path)


def parse_audit(raw: bytes, *, source: Path) -> AuditReport:
    """Validate an audit file's bytes (a local file, or the base's read through the API);
    ``source`` names it in errors."""
    from retrieval_gate.audit import AuditReport

    data = json_document(raw, source=source)
    try:
        return AuditReport.model_validate(data)
    except ValidationError as exc:
        raise InputError(Problem(display(source), None, f"not an audit file: {_first_error(exc)}")) from None


def _first_error(exc: ValidationError) -> str:
    """``field.path: message`` of a validation error's first problem."""
    first = exc.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
