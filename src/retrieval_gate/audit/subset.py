"""The PR subset: a deterministic stratified sample that keeps coverage (pure).

Cases are grouped into cells by the ``by`` fields (the coverage fields: ``kind``, ``locale``,
``tag.KEY``, ``gold.KEY``, …). Every non-empty cell keeps min(``per_cell``, its size) cases,
chosen in this order: adversarial cases first, then cases with a ``hard_class``, then the rest.
Inside a tier the hard classes take turns (one case of each class before a second of any), and
cases of one class come in the order of a seeded hash of their id (SHA-256 of
``"{seed}:{id}"``), so the choice does not depend on the file's order or on Python's random
module. The subset keeps the cases' original order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_gate.audit.coverage import field_value
from retrieval_gate.audit.model import AuditCard
from retrieval_gate.models import Case


def _tier(case: Case) -> int:
    return (0 if case.kind == "adversarial" else 2) + (0 if case.hard_class else 1)


def _digest(case: Case, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{case.id}".encode()).hexdigest()


def draw_order(cases: Sequence[Case], seed: int) -> list[Case]:
    """The order a cell's cases are kept in: by tier (adversarial with a hard class, adversarial,
    hard class, the rest), then by turn (the n-th case of each hard class before any (n+1)-th),
    then by seeded hash."""
    by_group: dict[tuple[int, str], list[Case]] = {}
    for case in cases:
        by_group.setdefault((_tier(case), case.hard_class or ""), []).append(case)
    keyed = []
    for (tier, _), members in by_group.items():
        for turn, case in enumerate(sorted(members, key=lambda c: _digest(c, seed))):
            keyed.append(((tier, turn, _digest(case, seed)), case))
    return [case for _, case in sorted(keyed, key=lambda item: item[0])]


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
        cells.setdefault(tuple(field_value(case, name=f, cards=cards or {}) for f in by), []).append(case)
    chosen: set[str] = set()
    per: list[dict[str, Any]] = []
    for key in sorted(cells):
        members = draw_order(cells[key], seed)[:per_cell]
        chosen.update(c.id for c in members)
        per.append({"cell": dict(zip(by, key, strict=True)), "size": len(cells[key]), "kept": len(members)})
    subset = [c for c in cases if c.id in chosen]
    summary = {"of": len(cases), "n": len(subset), "by": list(by), "per_cell": per_cell, "seed": seed,
               "cells": per}
    return subset, summary
