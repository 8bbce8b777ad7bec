"""Baseline schema migrations: an older layout → the current one. Pure, dict → dict.

Versions
- 1 (pre-release): the current layout without ``headline_k`` and without ``history``.
- 2: adds ``headline_k`` (5 when measured, else the largest k — the results file's
  rule) and ``history``. Migrating seeds the history with the v1 file's own headline numbers,
  so the trend starts at the baseline the user already had.
- 3 (current): the fingerprint records how the numbers were scored (``relevance``: level,
  graded gains, mean convention). Every earlier file was scored at level 1 with binary gains
  and the ``relevant`` mean, which migrating writes down — so a graded or ``--mean trec`` run
  compared with it is (rightly) not like for like.
- 4 (current): each case keeps its ranking (``ranked``, ``ranked_scores``) and the file stores
  per-case scores as a list aligned with the top-level ``score_keys`` (``baseline.codec``).
  Migrating marks the file ``rankings: false``: there is no earlier ranking to show, and the
  comparison says so once.

A newer version than ``BASELINE_SCHEMA_VERSION`` is never guessed at: it is refused by the reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from retrieval_gate.baseline.fingerprint import relevance_fingerprint
from retrieval_gate.baseline.model import BASELINE_SCHEMA_VERSION, headline_numbers
from retrieval_gate.metrics.names import default_headline_k
from retrieval_gate.score.results import MetricCell


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    k = out.get("k")
    if "headline_k" not in out and isinstance(k, list) and k and all(isinstance(x, int) for x in k):
        out["headline_k"] = default_headline_k(k)
    if "history" not in out:
        out["history"] = _seed_history(out)
    out["schema_version"] = 2
    return out


def _seed_history(data: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        aggregates = {s: {m: MetricCell.model_validate(c) for m, c in cells.items()}
                      for s, cells in data.get("aggregates", {}).items()}
        headline, n = headline_numbers(aggregates, headline_k=data["headline_k"])
    except (AttributeError, KeyError, TypeError, ValueError):
        return []  # a malformed v1 file: validation will name the problem
    if not headline:
        return []
    return [{"sha": data.get("sha"), "ref": data.get("ref"), "timestamp": data.get("updated_at"),
             "headline": headline, "n": n}]


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    fingerprint = out.get("fingerprint")
    if isinstance(fingerprint, dict) and "relevance" not in fingerprint:
        out["fingerprint"] = {**fingerprint, "relevance": relevance_fingerprint()}
    out["schema_version"] = 3
    return out


def _v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    out["rankings"] = False
    out["schema_version"] = 4
    return out


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Apply each step from ``data["schema_version"]`` up to the current version."""
    version = data["schema_version"]
    while version < BASELINE_SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version = data["schema_version"]
    return data
