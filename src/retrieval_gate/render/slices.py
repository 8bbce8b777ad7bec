"""Slice names and their display order. Pure.

Slice names are ``overall``, ``no-answer`` and ``field=value`` (``locale=pt-BR``, ``tag.team=search``).
Display order: kind, locale, form, hard class, then tags, then anything else; values in natural
order (``l2`` before ``l10``).
"""

from __future__ import annotations

import re
from typing import Any

SLICE_FIELD_ORDER = ("kind", "locale", "form", "hard_class")


def split_slice(name: str) -> tuple[str, str]:
    """``"locale=pt-BR"`` → ``("locale", "pt-BR")``; ``"no-answer"`` → ``("no-answer", "")``."""
    field_name, sep, value = name.partition("=")
    return (field_name, value) if sep else (name, "")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """``"l10"`` sorts after ``"l2"``: digit runs compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.lower())
                 for part in re.findall(r"\d+|\D+", text))


def slice_order(field_name: str, value: str) -> tuple[Any, ...]:
    """kind, locale, form, hard class, then tags, then anything else; values in natural order."""
    if field_name in SLICE_FIELD_ORDER:
        return (SLICE_FIELD_ORDER.index(field_name), "", natural_key(value))
    if field_name.startswith("tag."):
        return (len(SLICE_FIELD_ORDER), field_name, natural_key(value))
    return (len(SLICE_FIELD_ORDER) + 1, field_name, natural_key(value))


def field_label(field_name: str) -> str:
    if field_name.startswith("tag."):
        return "tag " + field_name[4:]
    return field_name.replace("_", " ")
