"""The coverage matrix and the minimum detectable effect of each cell (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import product

from retrieval_gate.audit.model import AuditCard, Coverage, CoverageCell, Finding
from retrieval_gate.audit.params import CASE_FIELDS
from retrieval_gate.models import Case
from retrieval_gate.stats.power import cases_needed, mde

NONE = "(none)"
NO_GOLD = "(no gold)"
MAX_LISTED_EMPTY = 10_000


def best_case_mde(n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest drop of a hit rate over ``n`` cases that a paired comparison can detect *at
    best*: the comparison's own MDE (``stats.power.mde``, exact sign test, power ``power``,
    two-sided ``alpha``) under its no-change prior — only the cases that lose their hit change.
    Any churn (cases gaining and losing in the same run) makes the real MDE larger, so a cell
    flagged here stays underpowered in every comparison. 1.0 when no drop is detectable at n
    (fewer cases than the sign test needs to reject at all)."""
    if n <= 0:
        raise ValueError("n must be positive")
    value, _ = mde(n=n, diffs=None, binary=True, alpha=alpha, power=power)
    return 1.0 if value is None else min(1.0, value)


def required_n(max_drop: float, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """The smallest n whose ``best_case_mde`` is ≤ ``max_drop`` (``stats.power.cases_needed``);
    None for a drop ≤ 0 or one no n up to ten million sees."""
    return cases_needed(effect=max_drop, diffs=None, binary=True, alpha=alpha, power=power)


def default_fields(cards: Mapping[str, AuditCard]) -> list[str]:
    fields = ["kind", "locale"]
    for key in ("doc_type", "section"):
        if any(key in m for card in cards.values() for m in card.metadata):
            fields.append(f"gold.{key}")
    return fields


def field_value(case: Case, name: str, cards: Mapping[str, AuditCard]) -> str:
    """The case's value of a coverage field; ``gold.KEY`` is the first gold card's metadata (its
    first entry that has the key)."""
    if name in CASE_FIELDS:
        value = case.tags.get("split") if name == "split" else getattr(case, name)
        return NONE if value is None else str(value)
    if name.startswith("tag."):
        return case.tags.get(name[4:], NONE)
    key = name[5:]
    if not case.gold:
        return NO_GOLD
    for gold in case.gold:
        card = cards.get(gold)
        for meta in card.metadata if card else ():
            if key in meta:
                return str(meta[key])
    return NONE


def coverage_matrix(
    *,
    cases: Sequence[Case],
    cards: Mapping[str, AuditCard],
    fields: Sequence[str],
    max_drop: float,
    alpha: float,
    power: float,
    metric: str,
    hits: Mapping[str, bool] | None = None,
) -> Coverage:
    """Counts per cell (every observed combination), the cells of the observed values' cross
    product that hold no case, and per cell the MDE of the hit rate against ``max_drop``.
    ``hits`` (case id → hit at the headline k) comes from a results file when given."""
    cells: dict[tuple[str, ...], list[Case]] = {}
    for case in cases:
        key = tuple(field_value(case, f, cards) for f in fields)
        cells.setdefault(key, []).append(case)
    out_cells = []
    for key in sorted(cells):
        members = cells[key]
        gold = [c for c in members if c.gold]
        n_gold = len(gold)
        cell_hits = None
        if hits is not None:
            cell_hits = sum(1 for c in gold if hits.get(c.id))
        value = None if n_gold == 0 else best_case_mde(n_gold, alpha=alpha, power=power)
        out_cells.append(CoverageCell(
            values=dict(zip(fields, key, strict=True)), n=len(members), n_gold=n_gold, hits=cell_hits,
            mde=None if value is None else round(value, 4),
            detectable=None if value is None else value <= max_drop,
        ))
    observed = [sorted({k[i] for k in cells}) for i in range(len(fields))]
    size = math.prod(len(v) for v in observed)
    empty: list[dict[str, str]] = []
    listed = size <= MAX_LISTED_EMPTY
    if listed:
        empty = [dict(zip(fields, combo, strict=True)) for combo in product(*observed) if combo not in cells]
    return Coverage(fields=list(fields), max_drop=max_drop, alpha=alpha, power=power, metric=metric,
                    cells=out_cells, empty_cells=empty, empty_cells_listed=listed,
                    required_n=required_n(max_drop, alpha=alpha, power=power))


def cell_name(values: Mapping[str, str]) -> str:
    return " × ".join(f"{k}={v}" for k, v in values.items())


def coverage_findings(coverage: Coverage) -> list[Finding]:
    out = []
    for empty in coverage.empty_cells:
        out.append(Finding(kind="empty_coverage_cell", severity="low", cell=cell_name(empty),
                           reason=f"no case covers {cell_name(empty)}"))
    for cell in coverage.cells:
        if cell.detectable is False:
            assert cell.mde is not None
            out.append(Finding(
                kind="underpowered_cell", severity="low", cell=cell_name(cell.values),
                reason=f"{cell_name(cell.values)}: n = {cell.n_gold} detects at best a drop of {cell.mde:.3f} "
                       f"in {coverage.metric}, not the gate's max_drop {coverage.max_drop:g}",
                data={"n": cell.n_gold, "mde": cell.mde}))
    return out
