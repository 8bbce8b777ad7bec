"""The PR subset: a deterministic stratified sample that keeps coverage (pure).

Cases are grouped into cells by the ``by`` fields (the coverage fields: ``kind``, ``locale``,
``tag.KEY``, ``gold.KEY``, …). Every non-empty cell keeps min(``per_cell``, its size) cases,
chosen in this order: adversarial cases first, then cases with a ``hard_class``, then the rest;
within each tier by a seeded hash of the case id (SHA-256 of ``"{seed}:{id}"``), so the choice
does not depend on the file's order or on Python's random module. The subset keeps the cases'
original order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_gate.audit.coverage import field_value
from retrieval_gate.audit.model import AuditCard
from retrieval_gate.models import Case


def draw_key(case: Case, seed: int) -> tuple[int, int, str]:
    """Sort key of a case inside its cell: (adversarial first, hard class first, seeded hash)."""
    digest = hashlib.sha256(f"{seed}:{case.id}".encode()).hexdigest()
    return (0 if case.kind == "adversarial" else 1, 0 if case.hard_class else 1, digest)


def stratified_subset(
    *,
    cases: Sequence[Case],
    by: Sequence[str],
    per_cell: int,
    seed: int,
    cards: Mapping[str, AuditCard] | None = None,
) -> tuple[list[Case], dict[str, Any]]:
    """The chosen cases (in their original order) and a summary: cells, per-cell sizes kept."""
    if per_cell < 1:
        raise ValueError("per_cell must be at least 1")
    cells: dict[tuple[str, ...], list[Case]] = {}
    for case in cases:
        cells.setdefault(tuple(field_value(case, f, cards or {}) for f in by), []).append(case)
    chosen: set[str] = set()
    per: list[dict[str, Any]] = []
    for key in sorted(cells):
        members = sorted(cells[key], key=lambda c: draw_key(c, seed))[:per_cell]
        chosen.update(c.id for c in members)
        per.append({"cell": dict(zip(by, key, strict=True)), "size": len(cells[key]), "kept": len(members)})
    subset = [c for c in cases if c.id in chosen]
    summary = {"of": len(cases), "n": len(subset), "by": list(by), "per_cell": per_cell, "seed": seed,
               "cells": per}
    return subset, summary
