"""Metadata filters and the filter false-exclusion rate (reference article, Part 5). Pure.

A case may carry ``filter``: a mapping in Chroma's ``where`` language, evaluated against each
card's ``metadata``. Every retriever applies the *same* predicate: the dense retriever passes
``to_chroma_where(filter)`` to Chroma, BM25 masks its index with ``matches``. The language:

    {"locale": "en-US"}                         equality (several keys = all must hold)
    {"year": {"$gte": 2020}}                    $eq $ne $gt $gte $lt $lte $in $nin
    {"$and": [{…}, {…}]}  {"$or": [{…}, {…}]}   logic

Semantics follow Chroma (checked against chromadb 1.5 in tests/unit/test_filters.py): a missing
key fails $eq/$in/$gt…, passes $ne/$nin; booleans never equal numbers; $gt… take numbers only.
One known difference: Chroma 1.5 compares an *integer* value with a fractional bound after
truncating the bound (``{"n": {"$lt": 2.5}}`` misses n = 2); here numbers compare as numbers.

The false-exclusion rate counts the catastrophic case — a filter that removes every eligible gold
card before retrieval runs, which no retriever or reranker can recover from:

    filter_false_exclusion_rate = #(filtered cases whose every eligible gold card fails the filter)
                                  / #(filtered cases with ≥ 1 eligible gold card)

recall@k keeps the ORIGINAL eligible gold set as its denominator; gold is never rebuilt after
filtering (that would drop exactly the failures and report 100 %).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from retrieval_gate.errors import MeasurementError, Problem
from retrieval_gate.models import Case

COMPARISONS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")
LOGICAL = ("$and", "$or")
_SCALAR = (str, int, float, bool)


def filter_problems(where: Any, path: str = "filter") -> list[str]:
    """Every reason ``where`` is not a valid filter, as ``path: message`` strings (empty = valid)."""
    if not isinstance(where, Mapping):
        return [f"{path}: must be a mapping, got {type(where).__name__}"]
    out: list[str] = []
    for key, value in where.items():
        here = f"{path}.{key}"
        if key in LOGICAL:
            if not isinstance(value, list) or not value:
                out.append(f"{here}: must be a non-empty list of filters")
                continue
            for i, item in enumerate(value):
                out.extend(filter_problems(item, f"{here}[{i}]"))
        elif key.startswith("$"):
            out.append(f"{here}: unknown operator (known: {', '.join(LOGICAL)} at the top)")
        elif isinstance(value, Mapping):
            if len(value) != 1:
                out.append(f"{here}: give exactly one operator, e.g. {{\"$eq\": …}}")
                continue
            op, operand = next(iter(value.items()))
            out.extend(_operand_problems(f"{here}.{op}", op, operand))
        elif not isinstance(value, _SCALAR):
            out.append(f"{here}: value must be a string, number or boolean")
    return out


def _operand_problems(where: str, op: str, operand: Any) -> list[str]:
    if op not in COMPARISONS:
        return [f"{where}: unknown operator (known: {', '.join(COMPARISONS)})"]
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand or not all(isinstance(v, _SCALAR) for v in operand):
            return [f"{where}: must be a non-empty list of strings, numbers or booleans"]
        if len({type(v) for v in operand}) > 1:
            return [f"{where}: every value must have the same type (Chroma rejects mixed lists)"]
        return []
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            return [f"{where}: must be a number"]
        return []
    if not isinstance(operand, _SCALAR):
        return [f"{where}: must be a string, number or boolean"]
    return []


def _same(a: Any, b: Any) -> bool:
    """Chroma equality: booleans equal only booleans; ints and floats compare numerically."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _compare(value: Any, op: str, operand: Any, present: bool) -> bool:
    if op == "$eq":
        return present and _same(value, operand)
    if op == "$ne":
        return not (present and _same(value, operand))
    if op == "$in":
        return present and any(_same(value, o) for o in operand)
    if op == "$nin":
        return not (present and any(_same(value, o) for o in operand))
    if not present or isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if op == "$gt":
        return value > operand
    if op == "$gte":
        return value >= operand
    if op == "$lt":
        return value < operand
    return value <= operand  # $lte


def matches(metadata: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """Does a card with ``metadata`` pass ``where``? ``None`` or ``{}`` passes everything.
    Assumes a valid filter (see ``filter_problems``)."""
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            ok = all(matches(metadata, sub) for sub in cond)
        elif key == "$or":
            ok = any(matches(metadata, sub) for sub in cond)
        else:
            op, operand = next(iter(cond.items())) if isinstance(cond, Mapping) else ("$eq", cond)
            ok = _compare(metadata.get(key), op, operand, key in metadata)
        if not ok:
            return False
    return True


def to_chroma_where(where: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The same predicate in the shape Chroma accepts: one top-level key per mapping (several
    keys become ``$and``), ``None`` for no filter."""
    if not where:
        return None
    parts: list[dict[str, Any]] = []
    for key, cond in where.items():
        if key in LOGICAL:
            subs = [s for s in (to_chroma_where(sub) for sub in cond) if s is not None]
            if len(subs) == 1:
                parts.append(subs[0])
            elif subs:
                parts.append({key: subs})
        else:
            parts.append({key: dict(cond) if isinstance(cond, Mapping) else cond})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


def filter_key(where: Mapping[str, Any] | None) -> str:
    """A stable text key for caching per-filter masks."""
    return json.dumps(where or {}, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class FalseExclusion:
    """The measured rate and what it was measured over."""

    rate: float
    excluded: int  # filtered cases whose every eligible gold card fails the filter
    measured: int  # filtered cases with ≥ 1 eligible gold card (the denominator)
    filtered: int  # cases carrying a filter
    excluded_ids: tuple[str, ...] = field(default=())

    def as_extras(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "excluded": self.excluded,
            "measured": self.measured,
            "filtered_cases": self.filtered,
            "excluded_ids": list(self.excluded_ids),
        }


def filter_false_exclusion_rate(
    *,
    cases: Iterable[Case],
    card_metadata: Mapping[str, Mapping[str, Any] | Sequence[Mapping[str, Any]]],
    eligible: Set[str] | None = None,
) -> FalseExclusion:
    """The rate over the cases that carry a ``filter`` (see the module docstring).

    ``card_metadata`` maps each card id to its metadata — or to the metadata of each of its
    chunks, as the retrievers see them (a card survives when any chunk passes); ``eligible`` is
    the set of cards the caller is entitled to see (default: every card). A gold card outside it
    is not a false exclusion — it belongs in an entitlement test. Raises ``MeasurementError``
    when no filtered case has an eligible gold card: an unmeasured rate must never pass as 0.
    """
    allowed = set(card_metadata) if eligible is None else set(eligible) & set(card_metadata)
    filtered = measured = 0
    excluded: list[str] = []
    for case in cases:
        if case.filter is None:
            continue
        filtered += 1
        eligible_gold = [g for g in case.gold if g in allowed]
        if not eligible_gold:
            continue
        measured += 1
        if not any(_survives(card_metadata[g], case.filter) for g in eligible_gold):
            excluded.append(case.id)
    if measured == 0:
        raise MeasurementError(
            f"filter false-exclusion rate: none of the {filtered} filtered case(s) has an eligible "
            "gold card, so the rate cannot be measured (it is not 0)"
        )
    return FalseExclusion(rate=len(excluded) / measured, excluded=len(excluded), measured=measured,
                          filtered=filtered, excluded_ids=tuple(excluded))


def _survives(metadata: Mapping[str, Any] | Sequence[Mapping[str, Any]], where: Mapping[str, Any]) -> bool:
    if isinstance(metadata, Mapping):
        return matches(metadata, where)
    return any(matches(m, where) for m in metadata)


def false_exclusion_extras(
    *, cases: Sequence[Case], units: Iterable[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any] | None:
    """``Results.extras["filter_false_exclusion"]``: ``None`` when no case has a filter; else the
    measured rate, or ``rate: null`` with the reason when it cannot be measured (never 0).
    ``units`` are ``(card id, metadata)`` of every indexed chunk — the metadata retrievers filter on."""
    if not any(case.filter is not None for case in cases):
        return None
    per_card: dict[str, list[Mapping[str, Any]]] = {}
    for card_id, metadata in units:
        per_card.setdefault(card_id, []).append(metadata)
    try:
        return filter_false_exclusion_rate(cases=cases, card_metadata=per_card).as_extras()
    except MeasurementError as exc:
        return {"rate": None, "excluded": 0, "measured": 0,
                "filtered_cases": sum(1 for c in cases if c.filter is not None), "excluded_ids": [],
                "note": str(exc)}


def case_filter_problems(*, cases: Sequence[Case], path: str, lines: Mapping[str, int]) -> list[Problem]:
    """One ``file:line`` problem per invalid ``filter`` in the cases (checked before any retrieval)."""
    out = []
    for case in cases:
        if case.filter is not None:
            for message in filter_problems(case.filter):
                out.append(Problem(path, lines.get(case.id), f"case {case.id!r}: {message}"))
    return out
