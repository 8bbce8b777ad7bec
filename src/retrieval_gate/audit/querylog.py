"""A query log made fit to draw golden cases from (docs/golden-set.md): cleaning, personal data
masked, exact duplicates collapsed. Pure: the rows come from ``load.querylog``.

- **Clean.** Whitespace normalised (NFC, runs of whitespace → one space, trimmed). A line is
  dropped when it is empty, not text (a control character other than whitespace, the Unicode
  replacement character of an undecodable byte, or no letter or digit at all) or longer than
  ``MAX_QUERY_CHARS`` (a pasted document, not a query).
- **Personal data.** E-mail addresses, IBANs (mod-97 valid), payment card numbers (13–19 digits,
  Luhn valid) and phone numbers (7–15 digits in three or more groups, or a ``+`` and 8–15
  digits) become ``<email>``, ``<iban>``, ``<card>``, ``<phone>``, in that order, before
  anything is compared or embedded — so masked queries also collapse together.
- **Exact duplicates**: the same text ignoring case and whitespace is one query; its ``count``
  is the sum of the lines' counts (a line without a count stands for 1), its wording the most
  frequent one, its slice fields the most frequent value of each (ties: the first seen).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

MAX_QUERY_CHARS = 500
PII_KINDS = ("email", "iban", "card", "phone")

_EMAIL_RE = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?!\w)")
_IBAN_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_CARD_RE = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_PHONE_RE = re.compile(r"(?<![\w+])(?:\+\d[\d ().-]{6,}\d|\(?\d{2,4}\)?(?:[ .-]\(?\d{2,4}\)?){2,4})(?![\w])")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


@dataclass(frozen=True)
class RawQuery:
    """One line of the log as read: its text, the traffic it stands for, its other columns."""

    line: int
    text: str
    count: int = 1
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LogQuery:
    """One distinct query: the kept wording, its traffic, its slice fields, the lines it stands for."""

    text: str
    count: int
    fields: Mapping[str, str]
    lines: int
    first_line: int


@dataclass
class CleanReport:
    """What cleaning did: lines read, dropped (by reason), masked items (by kind), duplicates."""

    read: int = 0
    dropped: Counter = field(default_factory=Counter)
    masked: Counter = field(default_factory=Counter)
    duplicates: int = 0
    too_long: int = 0  # distinct queries (ignoring case and whitespace) dropped as over ``max_chars``
    max_chars: int = MAX_QUERY_CHARS


def normalise(text: str) -> str:
    """NFC, whitespace runs → one space, trimmed."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def drop_reason(text: str, *, max_chars: int = MAX_QUERY_CHARS) -> str | None:
    """Why a normalised line is not a query (None: it is one)."""
    if not text:
        return "empty"
    if _CONTROL_RE.search(text) or not any(ch.isalnum() for ch in text):
        return "not text"
    if len(text) > max_chars:
        return f"over {max_chars} characters"
    return None


def luhn_valid(digits: str) -> bool:
    """The Luhn check of a card number (digits only)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(text: str) -> bool:
    """ISO 13616's mod-97 check (spaces ignored)."""
    code = text.replace(" ", "")
    if not 15 <= len(code) <= 34:
        return False
    moved = code[4:] + code[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def mask_pii(text: str) -> tuple[str, Counter]:
    """``text`` with e-mail addresses, IBANs, card numbers and phone numbers masked; the count
    of each kind masked."""
    found: Counter = Counter()

    def sub(kind: str, pattern: re.Pattern[str], text: str, valid=None) -> str:
        def one(match: re.Match[str]) -> str:
            if valid is not None and not valid(match.group(0)):
                return match.group(0)
            found[kind] += 1
            return f"<{kind}>"
        return pattern.sub(one, text)

    text = sub("email", _EMAIL_RE, text)
    text = sub("iban", _IBAN_RE, text, iban_valid)
    text = sub("card", _CARD_RE, text, lambda s: luhn_valid(re.sub(r"\D", "", s)))
    text = sub("phone", _PHONE_RE, text, lambda s: 7 <= len(re.sub(r"\D", "", s)) <= 15)
    return text, found


def duplicate_key(text: str) -> str:
    """Exact duplicates: the same text ignoring case and whitespace."""
    return " ".join(text.casefold().split())


def clean_log(rows: Iterable[RawQuery], *, keep_pii: bool = False,
              max_chars: int = MAX_QUERY_CHARS) -> tuple[list[LogQuery], CleanReport]:
    """The distinct queries of ``rows`` (in first-seen order) and what cleaning did."""
    report = CleanReport(max_chars=max_chars)
    long_keys: set[str] = set()
    wordings: dict[str, Counter] = {}
    values: dict[str, dict[str, Counter]] = {}
    first: dict[str, int] = {}
    lines: Counter = Counter()
    for row in rows:
        report.read += 1
        text = normalise(row.text)
        if (why := drop_reason(text, max_chars=max_chars)) is not None:
            report.dropped[why] += 1
            if len(text) > max_chars:
                long_keys.add(duplicate_key(text))
            continue
        if not keep_pii:
            text, masked = mask_pii(text)
            report.masked.update(masked)
        key = duplicate_key(text)
        if key in first:
            report.duplicates += 1
        first.setdefault(key, row.line)
        wordings.setdefault(key, Counter())[text] += row.count
        lines[key] += 1
        slot = values.setdefault(key, {})
        for name, value in row.fields.items():
            shown_value = value if keep_pii else mask_pii(value)[0]
            slot.setdefault(name, Counter())[shown_value] += row.count
    report.too_long = len(long_keys)
    out = []
    for key, line in first.items():
        counts = wordings[key]
        text = max(counts, key=lambda w: counts[w])  # most frequent; ties: the first seen
        fields = {name: max(c, key=lambda v, c=c: c[v]) for name, c in sorted(values[key].items())}
        out.append(LogQuery(text=text, count=sum(counts.values()), fields=fields, lines=lines[key], first_line=line))
    return out, report
