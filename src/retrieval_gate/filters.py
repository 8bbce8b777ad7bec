"""Metadata filters: the language, its validation and its predicate. Pure.

A case may carry ``filter``: a mapping in Chroma's ``where`` language, evaluated against each
card's ``metadata``. Every retriever applies the *same* predicate: the dense retriever passes
``to_chroma_where(filter)`` (below) to Chroma, the exact index and BM25 mask with
``matches``. The language:

    {"locale": "en-US"}                         equality (several keys = all must hold)
    {"year": {"$gte": 2020}}                    $eq $ne $gt $gte $lt $lte $in $nin
    {"$and": [{…}, {…}]}  {"$or": [{…}, {…}]}   logic

Semantics follow Chroma (checked against chromadb 1.5 in tests/unit/test_filters.py): a missing
key fails $eq/$in/$gt…, passes $ne/$nin; booleans never equal numbers; $gt… take numbers only.
One known difference: Chroma 1.5 compares an *integer* value with a fractional bound after
truncating the bound (``{"n": {"$lt": 2.5}}`` misses n = 2); here numbers compare as numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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


def filter_key(where: Mapping[str, Any] | None) -> str:
    """A stable text key for caching per-filter masks."""
    return json.dumps(where or {}, sort_keys=True, separators=(",", ":"))


# --- In Chroma's shape ------------------------------------------------------------------------
# A filter in the shape Chroma's ``where`` accepts (the store hands it to Chroma).

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
