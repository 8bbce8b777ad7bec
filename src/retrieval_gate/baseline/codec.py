"""The baseline file's text: parse (with migration) and dump (stable, small, line-wise). Pure.

Refusals raise ``BaselineError`` naming the source (exit 2): not JSON, not an object, no or a
non-integer ``schema_version``, a version newer than this tool knows, or content that does not
validate. Files are read by ``artifacts.baseline`` and written by ``artifacts.baseline.write_baseline``; reading
never writes, and ``baseline update`` reads first, so it never overwrites a file it could not read.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from retrieval_gate.baseline.migrate import migrate
from retrieval_gate.baseline.model import BASELINE_SCHEMA_VERSION, DECIMALS, Baseline
from retrieval_gate.errors import BaselineError

_MAX_ERRORS = 3


def parse_baseline(text: str, *, source: str) -> Baseline:
    """Parse, migrate (older schema versions) and validate a baseline document."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{source}:{exc.lineno}: not a baseline: JSON syntax error: {exc.msg} "
                            f"(column {exc.colno})") from None
    if not isinstance(data, dict):
        raise BaselineError(f"{source}: not a baseline: expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if _looks_like_results(data):
        raise BaselineError(f"{source}: this is a results file (from score/eval), not a baseline; "
                            "create a baseline from it with `retrieval-gate baseline update`")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BaselineError(f"{source}: not a baseline: missing or invalid 'schema_version'")
    if version > BASELINE_SCHEMA_VERSION:
        raise BaselineError(f"{source}: baseline schema_version {version} is newer than this tool reads "
                            f"({BASELINE_SCHEMA_VERSION}); upgrade retrieval-gate")
    data = migrate(expand_cases(data))
    try:
        return Baseline.model_validate(data)
    except ValidationError as exc:
        raise BaselineError(f"{source}: not a valid baseline (schema_version {version}): "
                            f"{_describe(exc)}") from None


def _looks_like_results(data: dict[str, Any]) -> bool:
    return isinstance(data.get("cases"), list) and "inputs" in data


def _describe(exc: ValidationError) -> str:
    parts = []
    errors = exc.errors(include_url=False)
    for err in errors[:_MAX_ERRORS]:
        loc = ".".join(str(p) for p in err["loc"]) or "(document)"
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"{loc}: {msg}")
    if len(errors) > _MAX_ERRORS:
        parts.append(f"and {len(errors) - _MAX_ERRORS} more")
    return "; ".join(parts)


def _round(value: float) -> float:
    return round(value, DECIMALS)


def _compact(value: float) -> float | int:
    """Rounded to 6 decimals; a whole number written without ``.0`` (most scores are 0 or 1)."""
    value = _round(value)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def expand_cases(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 4 stores each case's scores as a list aligned with ``score_keys`` (``null``: the
    case has no such score): back to ``{metric: value}``. Anything malformed is left for
    validation to name."""
    keys = data.get("score_keys")
    cases = data.get("cases")
    if not isinstance(keys, list) or not isinstance(cases, dict):
        return data
    out = {k: v for k, v in data.items() if k != "score_keys"}
    expanded = {}
    for case_id, case in cases.items():
        values = case.get("scores") if isinstance(case, dict) else None
        if isinstance(values, list) and len(values) <= len(keys) and all(isinstance(k, str) for k in keys):
            case = {**case, "scores": {k: v for k, v in zip(keys, values, strict=False) if v is not None}}
        expanded[case_id] = case
    out["cases"] = expanded
    return out


def baseline_data(baseline: Baseline) -> dict[str, Any]:
    """The JSON data written for a baseline: numbers rounded, case defaults omitted."""
    data = baseline.model_dump(mode="json")
    for cells in data["aggregates"].values():
        for cell in cells.values():
            cell["value"] = _round(cell["value"])
    for entry in data["history"]:
        entry["headline"] = {m: _round(v) for m, v in entry["headline"].items()}
    keys = sorted({m for case in data["cases"].values() for m in case["scores"]})
    cases = {}
    for case_id, case in data["cases"].items():
        values = [_compact(case["scores"][m]) if m in case["scores"] else None for m in keys]
        while values and values[-1] is None:
            values.pop()
        item: dict[str, Any] = {"scores": values} if values else {}
        if case["status"] != "scored":
            item["status"] = case["status"]
        if case["slices"]:
            item["slices"] = case["slices"]
        if case["ranked"]:
            item["ranked"] = case["ranked"]
        if case["ranked_scores"]:
            item["ranked_scores"] = case["ranked_scores"]
        cases[case_id] = item
    data["cases"] = cases
    data["score_keys"] = keys
    return data
