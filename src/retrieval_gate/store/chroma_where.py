"""Metadata filters (``retrieval_gate.filters``) in the shape Chroma's ``where`` accepts. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retrieval_gate.filters import LOGICAL


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
