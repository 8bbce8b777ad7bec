"""Number formatting shared by the Markdown and HTML templates (registered as filters). Every
function returns text built from numbers only, so it is marked safe.

Conventions: values with 3 decimals; deltas signed with a real minus sign (−); a delta that
rounds to zero shows as ``±0.000``; CIs as ``[lo, hi]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from urllib.parse import quote, urlsplit

from markupsafe import Markup

from retrieval_gate.compare.gate import format_p
from retrieval_gate.render.cells import Cell

MINUS = "−"
SPARK = "▁▂▃▄▅▆▇█"
STATUS_EMOJI = {
    "improved": "🟢",
    "regressed": "🔴",
    "below_floor": "🔴",
    "inconclusive": "🟡",
    "underpowered": "🔎",
    "ok": "⚪",
    "unchanged": "",
    "new": "🆕",
    "missing": "➖",
}
STATUS_WORDS = {
    "improved": "improved",
    "regressed": "regressed",
    "below_floor": "below floor",
    "inconclusive": "inconclusive",
    "underpowered": "underpowered",
    "ok": "no significant change",
    "unchanged": "unchanged (no case changed)",
    "new": "new",
    "missing": "missing now",
    "current": "",
}


def num(value: float | None, digits: int = 3) -> Markup:
    """``0.7804`` → ``0.780``; None → ``–``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Markup("–")
    return Markup(f"{value:.{digits}f}")


def signed(value: float | None, digits: int = 3) -> Markup:
    """``+0.040`` / ``−0.040`` / ``±0.000`` (when it rounds to zero); None → ``–``."""
    if value is None:
        return Markup("–")
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0.0:
        return Markup("±" + text)
    return Markup(("+" if value > 0 else MINUS) + text)


def arrow(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    if round(value, digits) == 0:
        return "="
    return "▲" if value > 0 else "▼"


def delta(cell: Cell) -> Markup:
    """Status emoji (🟢 improved, 🔴 regressed / below floor, 🟡 inconclusive, 🔎 underpowered,
    ⚪ no significant change), direction arrow, signed paired Δ: ``🔴 ▼ −0.040``."""
    if not cell.compared:
        return Markup("–")
    emoji = STATUS_EMOJI.get(cell.status, "")
    if cell.delta is None:
        return Markup(f"{emoji} {STATUS_WORDS.get(cell.status, cell.status)}".strip())
    return Markup(f"{emoji} {arrow(cell.delta)} {signed(cell.delta)}".strip())


def delta_plain(cell: Cell) -> Markup:
    """Arrow and signed Δ without the emoji (the HTML report colours it by status instead)."""
    if not cell.compared:
        return Markup("–")
    if cell.delta is None:
        return Markup(STATUS_WORDS.get(cell.status, cell.status))
    return Markup(f"{arrow(cell.delta)} {signed(cell.delta)}")


def ci(cell: Cell, column_level: float | None = None) -> Markup:
    """The paired CI of Δ as ``[−0.070, −0.010]`` (a bound at zero: ``0.000``), else
    ``p = 0.031``, else ``–``. A CI at another level than the report states is marked
    ``at 98.3%`` unless it is the ``column_level`` of the column it is shown in; ``‡``: the CI and
    the test disagree about 0 (the status reads the test)."""
    if cell.ci is not None:
        lo, hi = cell.ci
        actual = cell.ci_level if cell.ci_level is not None else cell.ci_level_row
        if column_level is not None:
            shown = actual is not None and abs(actual - column_level) > 1e-9
        else:
            shown = cell.ci_level is not None
        level = f" at {100 * actual:.1f}%" if shown and actual is not None else ""
        mark = " ‡" if cell.ci_agrees is False else ""
        return Markup(f"[{_bound(lo)}, {_bound(hi)}]{level}{mark}")
    if cell.p_value is not None:
        shown = format_p(cell.p_value)
        return Markup(f"p < {shown[1:]}" if shown.startswith("<") else f"p = {shown}")
    return Markup("–")


def _bound(value: float) -> str:
    """A CI bound: signed, except a bound at zero, which is ``0.000``."""
    text = signed(value)
    return text[1:] if text.startswith("±") else text


def mde_text(cell: Cell) -> Markup:
    """The minimum detectable effect at the cell's n, ``0.136``; ``none`` when no drop is
    detectable at this n; ``–`` when not compared."""
    if cell.mde is None:
        return Markup("none" if cell.compared and cell.n > 0 else "–")
    return Markup(f"{cell.mde:.3f}")


def level(value: float) -> Markup:
    """A confidence level as a percentage: ``0.95`` → ``95``, ``0.98333`` → ``98.3``."""
    text = f"{100 * value:.1f}"
    return Markup(text[:-2] if text.endswith(".0") else text)


def n_label(cell: Cell) -> Markup:
    """Paired n; when the runs scored different numbers of cases, both are added:
    ``195 (200 now, 198 before)``."""
    if not cell.compared or (cell.n == cell.n_current and cell.n == cell.n_baseline):
        return Markup(count(cell.n))
    return Markup(f"{count(cell.n)} ({count(cell.n_current)} now, {count(cell.n_baseline)} before)")


def count(value: int) -> Markup:
    """``12345`` → ``12,345``."""
    return Markup(f"{int(value):,}")


def change(baseline: float, current: float) -> Markup:
    """A per-case change: ``1 → 0`` for hits, ``0.631 → 0.000`` otherwise."""
    if baseline in (0.0, 1.0) and current in (0.0, 1.0):
        return Markup(f"{baseline:g} → {current:g}")
    return Markup(f"{num(baseline)} → {num(current)}")


SPARK_FLOOR = 0.02  # the smallest range a sparkline spans: 0.927 vs 0.9273 is not a cliff


def sparkline(values: Sequence[float]) -> Markup:
    """One block of ``▁…█`` per value, the values taken as printed (3 decimals), on a scale that
    spans their range but at least ``SPARK_FLOOR``, centred on them: height ``round((v − base) /
    span × 7)`` (halves down) with ``span = max(max − min, SPARK_FLOOR)`` and ``base = (min + max −
    span) / 2``. Equal values are a flat line at mid height (``▄``); values within the floor of
    each other move a block or two, not from the bottom to the top."""
    if not values:
        return Markup("")
    values = [round(v, 3) for v in values]
    lo, hi = min(values), max(values)
    span = max(hi - lo, SPARK_FLOOR)
    base = (lo + hi - span) / 2
    top = len(SPARK) - 1
    return Markup("".join(SPARK[min(top, max(0, math.floor((v - base) / span * top + 0.5 - 1e-9)))] for v in values))


def clamp01(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def safe_url(url: str) -> Markup | None:
    """An http(s) URL fit for ``[text](url)`` and ``href``: characters outside RFC 3986's set
    (spaces, quotes, ``<>()``, backticks, pipes…) percent-encoded; other schemes → None."""
    parts = urlsplit(str(url).strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return Markup(quote(str(url).strip(), safe=":/?#@!$&*+,;=%-._~[]"))
