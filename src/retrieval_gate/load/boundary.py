"""The input boundary: the limits every user file meets before any work starts, so that hostile
or broken input is one ``file:line`` problem (exit 2) instead of a crash after minutes of
embedding. Every JSON text a reader takes (JSONL lines, results, baselines, comparisons, HTTP
retriever answers) goes through :func:`parse_json`.

Limits (also in docs/formats.md, "Input limits"):

- a file of at most ``MAX_FILE_BYTES``, a line of at most ``MAX_LINE_BYTES``;
- JSON nested at most ``MAX_DEPTH`` levels (arrays and objects);
- numbers finite (``NaN``, ``Infinity`` and literals that overflow a double such as ``1e400`` are
  refused) and integers of at most ``MAX_INT_DIGITS`` digits;
- no key twice in one object (JSON's last-wins would silently drop data);
- strings that can be written back as UTF-8 (a lone surrogate escape such as ``\\ud800`` is refused);
- ids (cases, cards, run ids) of at most ``MAX_ID_CHARS`` characters; at most ``MAX_RECORDS``
  records (cases, cards, run rows) per file.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_FILE_BYTES = 2 * 1024**3
MAX_LINE_BYTES = 64 * 1024**2
MAX_DEPTH = 64
MAX_INT_DIGITS = 100
MAX_ID_CHARS = 1024
MAX_RECORDS = 20_000_000
QUOTE_CHARS = 80
ECHO_CHARS = 160  # the most of one value any printed line keeps (a retriever's failure reason quotes 160)

# Possessive quantifiers: the regex engine keeps no state per character, so a 20 MB string costs
# nothing beyond the text (``(?:[^"\\]|\\.)*`` kept ~115 bytes per character of it).
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
# Whole strings and the text between them, as far as a window allows: it ends outside any string.
_WHOLE_STRINGS = re.compile(r'(?:[^"]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_ONE_KIND = str.maketrans("{}", "[]")
DEPTH_WINDOW_CHARS = 1024**2
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class JsonRefused(ValueError):
    """A JSON text outside the limits. ``needle`` is a literal to locate the line by, if any."""

    def __init__(self, message: str, needle: str | None = None):
        super().__init__(message)
        self.message = message
        self.needle = needle


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr`` of a value for a message, cut to about ``limit`` characters (a 10 MB token is
    never echoed back whole)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"… ({len(text):,} characters)"


# A value a message quotes: a Python repr (``'…'`` or ``"…"``, escapes kept) that starts and ends
# a word (``the card's`` opens none), or a long run of characters that are neither spaces nor
# quotes. Possessive quantifiers: no backtracking.
_ECHOED = re.compile(r"""(?<!\w)(?:'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")(?!\w)"""
                     r"""|(?<![^\s'"])[^\s'"]{320,}+""")  # 320: 2 × ECHO_CHARS


def bound_echoes(message: str, limit: int = ECHO_CHARS) -> str:
    """``message`` with every value it quotes that is over ``limit`` + 40 characters cut to its
    first ``limit``, saying how long it was: the last guard of every line the tool prints about an
    input, whichever message formatted it (``quote`` cuts an offending value to ~80 itself; a
    message that did not — a 1 MB gold id in a finding — is cut here, never echoed whole)."""
    def cut(found: re.Match[str]) -> str:
        text = found.group()
        if len(text) <= limit + 40:
            return text
        quoted = text[0] in "'\"" and text[-1] == text[0]
        inner = text[1:-1] if quoted else text
        kept = inner[:limit]
        return (f"{text[0]}{kept}…{text[0]}" if quoted else f"{kept}…") + f" ({len(inner):,} characters)"

    return _ECHOED.sub(cut, message) if len(message) > limit + 40 else message


def clip(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"


def _no_constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not allowed: numbers must be finite", needle=name)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonRefused(f"number {quote(text, 40)} is out of range: numbers must be finite", needle=text)
    return value


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise JsonRefused(f"integer of {digits:,} digits: at most {MAX_INT_DIGITS} allowed "
                          "(give long ids as strings)", needle=text[:40])
    return int(text)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonRefused(f"duplicate key {quote(key)} in one object (JSON would keep only the last)",
                                  needle=json.dumps(key))
            seen.add(key)
    return out


def json_depth_exceeds(text: str, limit: int = MAX_DEPTH, *, window: int = DEPTH_WINDOW_CHARS) -> bool:
    """Whether arrays/objects nest deeper than ``limit`` (brackets inside strings ignored, escapes
    honoured). Streams: the text is read in windows of about ``window`` characters that end
    outside any string, and only the depth open at a window's end is carried to the next, so the
    memory beyond the text is a few windows whatever its size. Within a window the work is C-speed
    string operations (see :func:`_window_exceeds`). Text that is not balanced stops early and is
    left to the parser's syntax error."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth, pos, size = 0, 0, len(text)
    while pos < size:
        end = _WHOLE_STRINGS.match(text, pos, min(size, pos + window)).end()  # type: ignore[union-attr]
        if end == pos:  # a string longer than the window, or one that never ends
            string = _STRING.match(text, pos)
            if string is None:
                return False
            pos = string.end()
            continue
        brackets = _NOT_BRACKET.sub("", _STRING.sub("", text[pos:end])).translate(_ONE_KIND)
        pos = end
        opens = brackets.count("[")
        after = depth + opens - (len(brackets) - opens)
        if depth + opens > limit and _window_exceeds("[" * depth + brackets + "]" * max(after, 0), limit):
            return True
        if after < 0:
            return False
        depth = after
    return False


def _window_exceeds(brackets: str, limit: int) -> bool:
    """Whether a bracket sequence (``[`` and ``]`` only) nests deeper than ``limit``. Each round
    removes every innermost pair, which lowers the deepest point by exactly one, so a balanced
    sequence is empty after as many rounds as it is deep. (The caller opens the depth carried in
    and closes the depth left open, so a window's sequence is balanced when the JSON is.)"""
    for _ in range(limit):
        if not brackets:
            return False
        shorter = brackets.replace("[]", "")
        if shorter == brackets:
            return False
        brackets = shorter
    return "[]" in brackets


def bad_string(value: Any) -> str | None:
    """The first string (key or value) that cannot be encoded as UTF-8, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def loads(text: str) -> Any:
    """``json.loads`` within the limits; raises ``JsonRefused`` (a ValueError) or
    ``json.JSONDecodeError``."""
    if json_depth_exceeds(text):
        raise JsonRefused(f"nested deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_float=_float, parse_int=_int,
                           parse_constant=_no_constant)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise JsonRefused(f"nested deeper than {MAX_DEPTH} levels") from None
    if _SURROGATE_ESCAPE.search(text):
        bad = bad_string(value)
        if bad is not None:
            raise JsonRefused(f"string {bad[:40]!a} holds a lone surrogate escape: it cannot be "
                              "written as UTF-8")
    return value


def line_of(text: str, needle: str | None) -> int | None:
    """The 1-based line of ``needle``'s first occurrence in ``text``, or None."""
    if not needle:
        return None
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else None


def score_problem(value: float, text: str) -> str | None:
    """A message when a parsed score is not finite (NaN, inf, 1e400), else None."""
    return None if math.isfinite(value) else f"score {quote(text)} is not a finite number"


def id_problem(value: str, what: str = "id") -> str | None:
    """A message when an id is too long, else None."""
    if len(value) > MAX_ID_CHARS:
        return f"{what} {quote(value)} is longer than {MAX_ID_CHARS} characters"
    return None
