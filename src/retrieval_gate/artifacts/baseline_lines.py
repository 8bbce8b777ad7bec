"""Many versions of one baseline, read through the codec without parsing the same case twice
(adapter). A baseline's text has one line per case (``artifacts.baseline.baseline_text``); two
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


def split_block(text: str, *, opener: str) -> tuple[str, list[str], str] | None:
    """``(prefix, entry lines, suffix)`` of a text whose block ``opener`` (``  "cases": {``) holds
    one ``    "id": {…}`` entry per line (each without its comma), commas on all but the last; None
    otherwise. Each entry is checked by the codec when it is new (``_by_line``), and every id
    once when the version is put together. ``prefix + ",\n".join(lines) + suffix`` is the text."""
    head = f"\n{opener}\n"
    start = text.find(head)
    if start < 0:
        return None
    start += len(head)
    end = text.find("\n  }", start - 1)
    if end < 0:
        return None
    block = text[start:end]
    if not block:
        return text[:start], [], text[end:]
    count = block.count("\n") + 1
    if not block.startswith('    "') or not block.endswith("}") or block.count('},\n    "') != count - 1:
        return None
    return text[:start], block.split(",\n"), text[end:]


def _join(prefix: str, lines: list[str], suffix: str) -> str:
    return prefix + ",\n".join(lines) + suffix


class VersionReader:
    """Reads the versions of one baseline and its manifest, each distinct case / card line parsed
    once (module docstring)."""

    def __init__(self) -> None:
        self._cases: dict[str, dict[str, tuple[str, BaselineCase]]] = {}  # score_keys → line → case
        self._cards: dict[str, tuple[str, KbCard]] = {}

    def baseline(self, text: str, *, source: str) -> Baseline:
        split = split_block(text, opener='  "cases": {')
        keys = _SCORE_KEYS.search(split[2]) if split is not None and _CURRENT_SCHEMA in split[2] else None
        if split is None or keys is None or len(text) > boundary.MAX_FILE_BYTES:
            return baseline_from_text(text, source=source)
        prefix, entries, suffix = split
        seen = self._cases.setdefault(keys.group(1), {})
        new = _new_lines(entries, seen)
        parsed = baseline_from_text(_join(prefix, new, suffix), source=source)
        fresh = _by_line(new, parsed.cases)
        if fresh is None:
            return baseline_from_text(text, source=source)
        seen.update(fresh)
        cases = dict(map(seen.__getitem__, entries))
        if len(cases) != len(entries):  # an id twice: the whole text, which the codec refuses
            return baseline_from_text(text, source=source)
        return parsed.model_copy(update={"cases": cases})

    def manifest(self, text: str, *, source: str) -> dict[str, KbCard]:
        split = split_block(text, opener='  "cards": {')
        if split is None or len(text) > boundary.MAX_FILE_BYTES:
            return manifest_from_text(text, source=source)
        prefix, entries, suffix = split
        seen = self._cards
        new = _new_lines(entries, seen)
        parsed = manifest_from_text(_join(prefix, new, suffix), source=source)
        fresh = _by_line(new, parsed)
        if fresh is None:
            return manifest_from_text(text, source=source)
        seen.update(fresh)
        cards = dict(map(seen.__getitem__, entries))
        if len(cards) != len(entries):
            return manifest_from_text(text, source=source)
        return cards


def _new_lines(entries: list[str], seen: dict[str, Any]) -> list[str]:
    """The entries not seen before, each once, in their order (the set difference hashes each
    line once, in C)."""
    fresh = set(entries).difference(seen)
    return list(dict.fromkeys(line for line in entries if line in fresh)) if fresh else []


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

