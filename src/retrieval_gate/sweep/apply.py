"""``sweep --apply``: the winner's settings written into the suite's block of the config file
(pure text in, text out), keeping every other line — comments included — as it was.

Line-based on purpose (no YAML round-trip, which would drop the comments): each dotted key is
found as a block-style ``key:`` line under ``suites:`` → ``<suite>:`` → its parents; a scalar on
that line is replaced (a trailing comment kept), a missing key is added at the end of its parent
block, a missing parent block is added with it. Where the file is written some other way (flow
mappings ``{…}``, anchors, a value spread over lines) ``edit_config`` returns None and the caller
prints the change instead. The caller checks the result by reading it back with the config
file's own reader."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_KEY = re.compile(r"^(?P<indent>[ ]*)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*|\"[^\"]*\"|'[^']*'):(?P<rest>.*)$")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    return text if re.fullmatch(r"[A-Za-z0-9_./+-][A-Za-z0-9_./+ -]*", text) and text.strip() == text \
        and text.lower() not in ("true", "false", "null", "yes", "no", "on", "off") else json.dumps(text)


def _block(lines: list[str], start: int, indent: int) -> tuple[int, int | None]:
    """End (exclusive) of the block whose header is at ``start`` and the indent of its children."""
    child: int | None = None
    end = start + 1
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            continue
        width = len(lines[i]) - len(lines[i].lstrip(" "))
        if width <= indent:
            break
        child = width if child is None else child
        end = i + 1
    return end, child


def _find(lines: list[str], start: int, end: int, indent: int, key: str) -> int | None:
    for i in range(start, end):
        match = _KEY.match(lines[i])
        if match and len(match.group("indent")) == indent and match.group("key").strip("'\"") == key:
            return i
    return None


def _set(lines: list[str], header: int, indent: int, path: list[str], value: Any) -> bool:
    end, child = _block(lines, header, indent)
    child = child if child is not None else indent + 2
    row = _find(lines, header + 1, end, child, path[0])
    if row is None:
        text = [" " * (child + 2 * n) + f"{part}:" for n, part in enumerate(path[:-1])]
        text.append(" " * (child + 2 * (len(path) - 1)) + f"{path[-1]}: {_scalar(value)}")
        lines[end:end] = text
        return True
    rest = _KEY.match(lines[row]).group("rest")  # type: ignore[union-attr]
    if len(path) > 1:
        if rest.strip() and not rest.strip().startswith("#"):
            return False  # a flow mapping or a scalar where a block is wanted
        return _set(lines, row, child, path[1:], value)
    body, _hash, comment = rest.partition(" #")
    if body.strip().startswith(("{", "[", "|", ">", "&", "*", "!")) or not body.strip():
        return False
    lines[row] = " " * child + f"{path[0]}: {_scalar(value)}" + (f" #{comment}" if _hash else "")
    return True


def edit_config(text: str, *, suite: str, settings: Mapping[str, Any]) -> str | None:
    """``text`` with ``settings`` (dotted keys) written into ``suites.<suite>``; None where the
    file's shape is not one this edit handles."""
    lines = text.split("\n")
    suites = _find(lines, 0, len(lines), 0, "suites")
    if suites is None:
        return None
    end, child = _block(lines, suites, 0)
    child = child if child is not None else 2
    header = _find(lines, suites + 1, end, child, suite)
    if header is None:
        return None
    for key, value in settings.items():
        if not _set(lines, header, child, key.split("."), value):
            return None
    return "\n".join(lines)
