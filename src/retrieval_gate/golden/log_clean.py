"""A query log made fit to draw golden cases from (docs/golden-set.md): cleaning, secrets and
personal data masked, columns kept by allow-list, exact duplicates collapsed. Pure: the rows
come from ``golden.log_reader``.

- **Clean.** The masker's normal form (``golden.masking.normal_form``: NFKC, format characters
  such as zero-width spaces and bidi controls removed), whitespace runs → one space, trimmed. A line is
  dropped when it is empty, not text (a control character other than whitespace, the Unicode
  replacement character of an undecodable byte, or no letter or digit at all) or longer than
  ``MAX_QUERY_CHARS`` (a pasted document, not a query).
- **Secrets and personal data** (``golden.masking``: detect-secrets' plugins, phonenumbers,
  python-stdnum, email-validator, ipaddress) become ``<kind>`` — ``<secret>``, ``<email>``,
  ``<phone>``, ``<card>``, … — before anything is compared or embedded, so masked queries also
  collapse together; the values of the columns kept are masked alike — whole, before any cut —
  and so are the names of the columns dropped (a header cell may hold a key).
- **Columns by allow-list**: only ``KEPT_COLUMNS`` (``intent``, ``locale``; ``count`` is read as
  the traffic) and the columns named with ``--slice-column`` travel into ``fields``; every other
  column (``user_id``, ``user_agent``, ``referrer``, ``session``, …) is dropped and counted.
- **Exact duplicates**: the same text ignoring case and whitespace is one query; its ``count``
  is the sum of the lines' counts (a line without a count stands for 1), its wording the most
  frequent one, its slice fields the most frequent value of each (ties: the first seen).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from retrieval_gate.golden.masking import DEFAULT_REGION, KINDS, Masker, mask_text, normal_form

MAX_QUERY_CHARS = 500
MAX_VALUE_CHARS = 20 * MAX_QUERY_CHARS  # a longer column value is a pasted document: dropped, not cut
PII_KINDS = KINDS
KEPT_COLUMNS = ("intent", "locale")
MAX_CACHED_VALUES = 100_000

_MASK_HEAD_RE = re.compile(r"<[a-z]*")
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
    dropped_columns: Counter = field(default_factory=Counter)  # column name → rows that had it
    too_long: int = 0  # distinct queries (ignoring case and whitespace) dropped as over ``max_chars``
    max_chars: int = MAX_QUERY_CHARS


def normalise(text: str) -> str:
    """The masker's normal form (NFKC, format characters removed), whitespace runs → one space,
    trimmed."""
    return " ".join(normal_form(text).split())


def drop_reason(text: str, *, max_chars: int = MAX_QUERY_CHARS) -> str | None:
    """Why a normalised line is not a query (None: it is one)."""
    if not text:
        return "empty"
    if _CONTROL_RE.search(text) or not any(ch.isalnum() for ch in text):
        return "not text"
    if len(text) > max_chars:
        return f"over {max_chars} characters"
    return None


def mask_pii(text: str, *, masker: Masker | None = None) -> tuple[str, Counter]:
    """``text`` with secrets and personal data masked (``golden.masking``); the count of each kind."""
    return mask_text(text, masker=masker)


def kept_fields(fields: Mapping[str, str], *, keep: frozenset[str], dropped: Counter,
                name: Callable[[str], str] = lambda n: n) -> dict[str, str]:
    """The allow-listed columns of one row, each value normalised like a query and left whole
    (``cut_value`` cuts it once it is masked; a value over ``MAX_VALUE_CHARS`` is dropped); the
    names of the others counted in ``dropped`` as ``name`` writes them (masked)."""
    out = {}
    for column, value in fields.items():
        if column not in keep:
            dropped[name(column)] += 1
        elif (value := normalise(value)) and len(value) <= MAX_VALUE_CHARS:
            out[column] = value
    return out


def cut_value(masked: str) -> str:
    """A masked column value cut to ``MAX_QUERY_CHARS`` (after masking: a key across the cut is
    already ``<secret>``), without leaving half a ``<kind>``."""
    if len(masked) <= MAX_QUERY_CHARS:
        return masked
    cut = masked[:MAX_QUERY_CHARS]
    if (open_at := cut.rfind("<")) > cut.rfind(">") and _MASK_HEAD_RE.fullmatch(cut[open_at:]):
        cut = cut[:open_at]
    return cut.rstrip()


def duplicate_key(text: str) -> str:
    """Exact duplicates: the same text ignoring case and whitespace."""
    return " ".join(text.casefold().split())


def clean_log(rows: Iterable[RawQuery], *, keep_pii: bool = False, masker: Masker | None = None,
              slice_columns: Iterable[str] = (),
              max_chars: int = MAX_QUERY_CHARS) -> tuple[list[LogQuery], CleanReport]:
    """The distinct queries of ``rows`` (in first-seen order) and what cleaning did. ``masker``:
    the default region's when not given; ``keep_pii``: personal data kept, secrets still masked;
    ``slice_columns``: kept beside ``KEPT_COLUMNS``."""
    if masker is None or (keep_pii and masker.personal):
        masker = Masker(region=masker.region if masker else DEFAULT_REGION, personal=not keep_pii)
    report = CleanReport(max_chars=max_chars)
    long_keys: set[str] = set()
    keep = frozenset((*KEPT_COLUMNS, *slice_columns))
    masked_values: dict[str, tuple[str, Counter]] = {}
    masked_names: dict[str, str] = {}

    def masked_once(text: str) -> str:
        """A log repeats its frequent queries and column values (an intent, a locale): each
        distinct text is masked once (up to ``MAX_CACHED_VALUES`` texts of at most
        ``MAX_QUERY_CHARS``: a long column value is masked each time, never held), its masks
        counted each time."""
        if (hit := masked_values.get(text)) is None:
            hit = mask_pii(text, masker=masker)
            if len(masked_values) < MAX_CACHED_VALUES and len(text) <= MAX_QUERY_CHARS:
                masked_values[text] = hit
        if hit[1]:
            report.masked.update(hit[1])
        return hit[0]

    def masked_name(column: str) -> str:
        """A dropped column's name, masked like a value (a header cell may hold a key); its masks
        counted once, when first seen."""
        if (hit := masked_names.get(column)) is None:
            hit, found = mask_pii(normalise(column), masker=masker)
            report.masked.update(found)
            if len(masked_names) < MAX_CACHED_VALUES:
                masked_names[column] = hit
        return hit

    wordings: dict[str, Counter] = {}
    values: dict[str, dict[str, Counter]] = {}
    first: dict[str, int] = {}
    lines: Counter = Counter()
    for row in rows:
        report.read += 1
        text = normalise(row.text)
        fields = kept_fields(row.fields, keep=keep, dropped=report.dropped_columns, name=masked_name)
        if (why := drop_reason(text, max_chars=max_chars)) is not None:
            report.dropped[why] += 1
            if len(text) > max_chars:
                long_keys.add(duplicate_key(text))
            continue
        text = masked_once(text)
        key = duplicate_key(text)
        if key in first:
            report.duplicates += 1
        first.setdefault(key, row.line)
        wordings.setdefault(key, Counter())[text] += row.count
        lines[key] += 1
        slot = values.setdefault(key, {})
        for name, value in fields.items():
            if value := cut_value(masked_once(value)):  # masked whole, then cut
                slot.setdefault(name, Counter())[value] += row.count
    report.too_long = len(long_keys)
    out = []
    for key, line in first.items():
        counts = wordings[key]
        text = max(counts, key=lambda w: counts[w])  # most frequent; ties: the first seen
        fields = {name: max(c, key=lambda v, c=c: c[v]) for name, c in sorted(values[key].items())}
        out.append(LogQuery(text=text, count=sum(counts.values()), fields=fields, lines=lines[key], first_line=line))
    return out, report
