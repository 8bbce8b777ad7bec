"""The manifest ``retrieval-gate subset`` writes next to a PR subset (``<cases>.subset.json``):
how the subset was drawn and from how many cases. Read back (adapter) so results and audits of
a subset run say that they are a subset. A manifest whose recorded digest does not match the
cases file (the file was edited or regenerated since) is ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUFFIX = ".subset.json"


def manifest_path(cases: Path) -> Path:
    cases = Path(cases)
    return cases.with_name(cases.name + SUFFIX)


def read_subset_manifest(cases: Path, cases_sha256: str) -> dict[str, Any] | None:
    path = manifest_path(cases)
    if not Path(cases).is_file() or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("subset_sha256") != cases_sha256:
        return None
    return {k: data[k] for k in ("of", "n", "by", "per_cell", "seed", "full_cases_sha256") if k in data}
