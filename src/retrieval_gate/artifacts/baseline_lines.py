"""Many versions of one baseline, read through the codec without parsing the same case twice
(adapter). A baseline's text has one line per case (``baseline.codec.dumps_baseline``); two
refreshes a day apart share almost every line. ``VersionReader`` reads a version as

- the codec's own text with the case lines it has not seen replaced by nothing but those lines:
  ``artifacts.baseline.baseline_from_text`` parses (limits, migrations, validation) the head — the
  fingerprint, the aggregates, the completeness — and the new cases;
- the cases it has seen, byte for byte the same line under the same ``score_keys``, reused as parsed.

The result is the baseline ``baseline_from_text`` gives for the whole text. Any text not in the
codec's layout — hand-formatted, an older schema, a conflict marker, a case id twice, a comma
missing — is parsed whole by ``baseline_from_text``, which names what is wrong. The KB manifest
(one line per card) is read the same way."""

from __future__ import annotations

import json
import re
from typing import Any

from retrieval_gate.artifacts.baseline import baseline_from_text, manifest_from_text
from retrieval_gate.baseline.model import Baseline, BaselineCase
from retrieval_gate.load import boundary
from retrieval_gate.score.kb_manifest import KbCard

_ENTRY = re.compile(r'    ("(?:[^"\\]|\\.)*"): (\{.*\})(,?)\Z')
_SCORE_KEYS = re.compile(r'\n  "score_keys": (\[[^\]]*\])', re.DOTALL)
_CURRENT_SCHEMA = '  "schema_version": 4,'


def split_block(text: str, *, opener: str) -> tuple[list[str], list[str], list[str]] | None:
    """``(head, entry lines, tail)`` of a text whose block ``opener`` (``  "cases": {``) holds one
    ``    "id": {…}`` entry per line (each without its comma), commas on all but the last; None
    otherwise. Each entry is checked by the codec when it is new (``_by_line``), and every id
    once when the version is put together."""
    lines = text.split("\n")
    try:
        start = lines.index(opener)
    except ValueError:
        return None
    end = start + 1
    while end < len(lines) and lines[end].startswith('    "'):
        end += 1
    if end >= len(lines) or not lines[end].startswith("  }"):
        return None
    entries = lines[start + 1:end]
    if entries and entries[-1].endswith(","):
        return None
    body = [line[:-1] if line.endswith(",") else "" for line in entries[:-1]] + entries[-1:]
    if not all(line.endswith("}") for line in body):
        return None
    return lines[:start + 1], body, lines[end:]


def _join(head: list[str], lines: list[str], tail: list[str]) -> str:
    body = [f"{line}," for line in lines[:-1]] + lines[-1:]
    return "\n".join([*head, *body, *tail])


class VersionReader:
    """Reads the versions of one baseline and its manifest, each distinct case / card line parsed
    once (module docstring)."""

    def __init__(self) -> None:
        self._cases: dict[tuple[str, str], tuple[str, BaselineCase]] = {}
        self._cards: dict[str, tuple[str, KbCard]] = {}

    def baseline(self, text: str, *, source: str) -> Baseline:
        split = split_block(text, opener='  "cases": {') if _CURRENT_SCHEMA in text else None
        keys = _SCORE_KEYS.search(text)
        if split is None or keys is None or len(text) > boundary.MAX_FILE_BYTES:
            return baseline_from_text(text, source=source)
        head, entries, tail = split
        scope = keys.group(1)
        new = list(dict.fromkeys(line for line in entries if (scope, line) not in self._cases))
        parsed = baseline_from_text(_join(head, new, tail), source=source)
        fresh = _by_line(new, parsed.cases)
        if fresh is None:
            return baseline_from_text(text, source=source)
        for line, item in fresh.items():
            self._cases[(scope, line)] = item
        cases = dict(self._cases[(scope, line)] for line in entries)
        if len(cases) != len(entries):  # an id twice: the whole text, which the codec refuses
            return baseline_from_text(text, source=source)
        return parsed.model_copy(update={"cases": dict(sorted(cases.items()))})

    def manifest(self, text: str, *, source: str) -> dict[str, KbCard]:
        split = split_block(text, opener='  "cards": {')
        if split is None or len(text) > boundary.MAX_FILE_BYTES:
            return manifest_from_text(text, source=source)
        head, entries, tail = split
        new = list(dict.fromkeys(line for line in entries if line not in self._cards))
        parsed = manifest_from_text(_join(head, new, tail), source=source)
        fresh = _by_line(new, parsed)
        if fresh is None:
            return manifest_from_text(text, source=source)
        self._cards.update(fresh)
        cards = dict(self._cards[line] for line in entries)
        if len(cards) != len(entries):
            return manifest_from_text(text, source=source)
        return dict(sorted(cards.items()))


def _by_line(lines: list[str], parsed: dict[str, Any]) -> dict[str, tuple[str, Any]] | None:
    """Each new line → (its id, what the codec parsed for it); None when they do not line up."""
    out = {}
    for line in lines:
        match = _ENTRY.match(line)
        key = json.loads(match.group(1)) if match else None
        if key is None or key not in parsed:
            return None
        out[line] = (key, parsed[key])
    return out if len(out) == len(parsed) else None

