"""The sweep's point cache (shell): a point's run kept under its full fingerprint, so an unchanged
rerun reads it instead of running it.

- **Fingerprint** (``point_fingerprint``): sha256 over the tool's version, the content of the KB
  and of the cases (``files.sha256_path``: every file's name and bytes), the point's whole suite
  config (every setting, after the override), the sweep's metric and the identity of a handed-in
  embedder. Anything that could change a per-case score changes it; a point whose retriever runs
  user code or asks an endpoint (``python:``, ``http(s)://``, ``run:``) is never cached — its
  answers can change while every input stays the same.
- **Where**: ``<store folder>/sweep-points/<fingerprint>.json``, beside the embedding cache, written
  atomically once the folder is a store (its marker written by the first dense point); an
  ephemeral sweep keeps nothing.
- **Read back, verified** (``read_point``): a bounded read, then the file must carry this schema
  and this fingerprint, the sha256 of its run (the same canonical JSON it was written from) must
  match, and every field must have its type — counts ≥ 0, every score a finite number in [0, 1],
  the sweep's metric measured. Anything else is not a number yet: the point is run again, and
  the reason is shown.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrieval_gate import __version__
from retrieval_gate.files import ReadRefused, decode_text, read_bounded, sha256_path, write_json_atomic
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.folder import MARKER

POINT_SCHEMA = 1
FOLDER = "sweep-points"
MAX_POINT_BYTES = 64 * 1024 * 1024
KEPT = ("chunks", "texts", "metrics", "cases", "truncation", "search")  # a run's fields that the cache keeps


def cacheable(config: SuiteConfig) -> bool:
    """Only points whose answers follow from their inputs and settings alone."""
    return config.store.mode == "persistent" and config.store.path is not None and all(
        s.kind in ("dense", "bm25", "hybrid") for s in config.retrievers)


def inputs_fingerprint(config: SuiteConfig) -> str:
    """The KB's and the cases' contents (hashed once per sweep by the caller)."""
    return hashlib.sha256(f"{sha256_path(Path(config.kb or ''))}|{sha256_path(Path(config.cases or ''))}".encode()
                          ).hexdigest()


def point_fingerprint(config: SuiteConfig, *, inputs: str, metric: str, embedder: str | None) -> str:
    data = {"tool": __version__, "schema": POINT_SCHEMA, "inputs": inputs, "metric": metric,
            "embedder": embedder, "config": config.model_dump(mode="json")}
    return hashlib.sha256(_canonical(data).encode()).hexdigest()


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def point_path(config: SuiteConfig, fingerprint: str) -> Path:
    return Path(config.store.path or "") / FOLDER / f"{fingerprint}.json"


def write_point(config: SuiteConfig, *, fingerprint: str, run: Mapping[str, Any]) -> bool:
    """Keep a point's run (the fields of ``KEPT``); False when the store folder is not a store yet."""
    root = Path(config.store.path or "")
    if not (root / MARKER).is_file():
        return False
    kept = {key: run[key] for key in KEPT}
    write_json_atomic(point_path(config, fingerprint), data={
        "schema": POINT_SCHEMA, "fingerprint": fingerprint, "sha256": hashlib.sha256(_canonical(kept).encode())
        .hexdigest(), "run": kept})
    return True


def read_point(config: SuiteConfig, *, fingerprint: str, metric: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(kept fields, None)`` from a verified file; ``(None, why)`` when it is absent (why None) or
    cannot be trusted (module docstring)."""
    path = point_path(config, fingerprint)
    try:
        data = json.loads(decode_text(read_bounded(path, max_bytes=MAX_POINT_BYTES)))
    except ReadRefused as exc:
        return None, None if exc.missing else exc.reason
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(data, dict) or data.get("schema") != POINT_SCHEMA or data.get("fingerprint") != fingerprint:
        return None, "another schema or fingerprint"
    run = data.get("run")
    if not isinstance(run, dict) or set(run) != set(KEPT):
        return None, "its fields are not a point's"
    try:
        digest = hashlib.sha256(_canonical(run).encode()).hexdigest()
    except ValueError:
        return None, "a number that is not finite"
    if digest != data.get("sha256"):
        return None, "its content does not match its sha256"
    problem = _problem(run, metric=metric)
    return (None, problem) if problem else (run, None)


def _score(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1


def _problem(run: Mapping[str, Any], *, metric: str) -> str | None:
    if not isinstance(run["chunks"], int) or isinstance(run["chunks"], bool) or run["chunks"] < 0:
        return "chunks is not a count"
    if not isinstance(run["texts"], list) or not all(isinstance(t, str) for t in run["texts"]):
        return "texts is not a list of keys"
    metrics = run["metrics"]
    if not isinstance(metrics, dict) or metric not in metrics or not all(_score(v) for v in metrics.values()):
        return f"its means are not scores of {metric}"
    cases = run["cases"]
    if not isinstance(cases, dict) or not cases:
        return "no cases"
    for case in cases.values():
        if not isinstance(case, dict) or set(case) != {"scores", "slices"}:
            return "a case is not scores and slices"
        if not isinstance(case["scores"], dict) or not all(_score(v) for v in case["scores"].values()):
            return "a per-case score is not a number in [0, 1]"
        if not isinstance(case["slices"], list) or not all(isinstance(s, str) for s in case["slices"]):
            return "a case's slices are not names"
    if run["truncation"] is not None and not isinstance(run["truncation"], dict):
        return "truncation is not a report"
    if run["search"] is not None and not isinstance(run["search"], str):
        return "search is not a name"
    return None
