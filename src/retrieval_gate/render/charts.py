"""Inline SVG charts for the HTML report. Pure functions returning markup; every piece of text
is escaped with ``markupsafe.escape``; no ``xmlns`` or any other URL (inline SVG in HTML5 needs
none), so the report stays free of remote references.

- ``slice_chart``: one row per slice. Left panel: the current value as a bar, the baseline as a
  tick, a 95 % Wilson interval as whiskers when the metric is a proportion (hit@k). Right panel,
  when compared: the paired Δ as a bar from zero with its CI as whiskers.
- ``trend_chart``: the headline metric over the baseline history, then this run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from retrieval_gate.render.cells import Cell
from retrieval_gate.render.escape import clean_text
from retrieval_gate.render.trend import Trend
from retrieval_gate.stats.proportion import wilson

# Okabe–Ito: blue (better), vermillion (worse), orange (inconclusive), sky blue (the rest) stay apart under
# protanopia, deuteranopia and tritanopia, and read on a light or a dark page.
COLOURS = {"improved": "#0072B2", "regressed": "#D55E00", "below_floor": "#D55E00", "inconclusive": "#E69F00",
           "ok": "#56B4E9", "new": "#56B4E9", "missing": "#8c959f", "current": "#56B4E9"}
@dataclass(frozen=True)
class ChartRow:
    label: str
    cell: Cell
    indicative: bool = False


NICE_LIMITS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


def nice_limit(value: float) -> float:
    """The smallest of 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1 that is ≥ ``value`` (1 beyond that):
    the half-width of the Δ axis."""
    return next((n for n in NICE_LIMITS if value <= n + 1e-12), 1.0)


def nice_ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    """Axis bounds widened to a round step (0.01, 0.02, 0.05, 0.1, 0.2 or 0.25: the first giving at
    most 6 intervals) and the ticks between them."""
    span = max(hi - lo, 1e-9)
    step = next((s for s in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25) if span / s <= 6), 0.25)
    start = round(math.floor(lo / step + 1e-9) * step, 6)
    stop = round(math.ceil(hi / step - 1e-9) * step, 6)
    count = round((stop - start) / step)
    return start, stop, [round(start + i * step, 6) for i in range(count + 1)]


def _f(x: float) -> str:
    return f"{x:.1f}"


def slice_chart(rows: Sequence[ChartRow], *, title: str, proportion: bool, compared: bool,
                width: int = 960, row_height: int = 24) -> Markup:
    """Horizontal bars (value in [0, 1]) and, when compared, Δ bars with CI whiskers."""
    label_w, gap, n_w = 230, 44, 50
    value_w = (width - label_w - n_w - gap * 2) // (2 if compared else 1)
    delta_w = value_w if compared else 0
    top, bottom = 34, 26
    height = top + bottom + row_height * len(rows)
    x0 = label_w
    dx0 = label_w + value_w + gap
    max_abs = nice_limit(max([0.0] + [abs(v) for r in rows if r.cell.compared
                                      for v in ((r.cell.delta or 0.0), *(r.cell.ci or ()))]))

    def vx(v: float) -> float:
        return x0 + max(0.0, min(1.0, v)) * value_w

    def dx(v: float) -> float:
        v = max(-max_abs, min(max_abs, v))
        return dx0 + delta_w / 2 + (v / max_abs) * (delta_w / 2)

    out = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
           f"<title>{escape(title)}</title>",
           f'<text x="{x0}" y="16" class="axis-title">{escape(title)}</text>']
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{_f(vx(t))}" x2="{_f(vx(t))}" y1="{top - 6}" y2="{height - bottom}" class="grid"/>')
        out.append(f'<text x="{_f(vx(t))}" y="{height - 8}" class="tick" text-anchor="middle">{t:g}</text>')
    if compared:
        out.append(f'<text x="{dx0}" y="16" class="axis-title">Δ (paired) with CI</text>')
        for t in (-max_abs, -max_abs / 2, 0.0, max_abs / 2, max_abs):
            cls = "zero" if t == 0 else "grid"
            out.append(f'<line x1="{_f(dx(t))}" x2="{_f(dx(t))}" y1="{top - 6}" y2="{height - bottom}" class="{cls}"/>')
            tick = "0" if t == 0 else f"{t:+.3g}".replace("-", "−")
            out.append(f'<text x="{_f(dx(t))}" y="{height - 8}" class="tick" text-anchor="middle">{tick}</text>')
    n_x = width - 4
    out.append(f'<text x="{n_x}" y="16" class="axis-title" text-anchor="end">n</text>')
    for i, row in enumerate(rows):
        y = top + i * row_height
        mid = y + row_height / 2
        cell = row.cell
        colour = COLOURS.get(cell.status, COLOURS["current"])
        label = clean_text(row.label, max_len=34)
        cls = "label indicative" if row.indicative else "label"
        out.append(f'<text x="{label_w - 8}" y="{_f(mid + 4)}" class="{cls}" text-anchor="end">{escape(label)}'
                   f"{' *' if row.indicative else ''}</text>")
        if cell.current is not None:
            w = vx(cell.current) - x0
            out.append(f'<rect x="{x0}" y="{_f(y + 5)}" width="{_f(w)}" height="{row_height - 10}" '
                       f'fill="{colour}" opacity="0.75"><title>{escape(label)}: {cell.current:.3f} '
                       f"(n={cell.n_current})</title></rect>")
            if proportion and cell.n_current > 0:
                lo, hi = wilson(cell.current, n=cell.n_current)
                out.append(_whisker(vx(lo), vx(hi), mid, "whisker"))
        if cell.baseline is not None:
            bx = vx(cell.baseline)
            out.append(f'<line x1="{_f(bx)}" x2="{_f(bx)}" y1="{_f(y + 2)}" y2="{_f(y + row_height - 2)}" '
                       f'class="baseline-tick"><title>baseline {cell.baseline:.3f}</title></line>')
        if compared and cell.delta is not None:
            a, b = sorted((dx(0.0), dx(cell.delta)))
            out.append(f'<rect x="{_f(a)}" y="{_f(y + 5)}" width="{_f(max(b - a, 1.0))}" '
                       f'height="{row_height - 10}" fill="{colour}" opacity="0.75"><title>Δ {cell.delta:+.3f}'
                       f"</title></rect>")
            if cell.ci is not None:
                out.append(_whisker(dx(cell.ci[0]), dx(cell.ci[1]), mid, "whisker"))
        out.append(f'<text x="{n_x}" y="{_f(mid + 4)}" class="tick" text-anchor="end">{cell.n:,}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def _whisker(x1: float, x2: float, y: float, cls: str) -> str:
    return (f'<g class="{cls}"><line x1="{_f(x1)}" x2="{_f(x2)}" y1="{_f(y)}" y2="{_f(y)}"/>'
            f'<line x1="{_f(x1)}" x2="{_f(x1)}" y1="{_f(y - 5)}" y2="{_f(y + 5)}"/>'
            f'<line x1="{_f(x2)}" x2="{_f(x2)}" y1="{_f(y - 5)}" y2="{_f(y + 5)}"/></g>')


TREND_LABEL_PX = 84  # the widest x label (12 characters at 11 px) plus a gap: labels never closer


def trend_labelled(n: int, step: float) -> list[int]:
    """Indices of the points that get an x label and a value label: every ``every``-th from the
    first, ``every`` chosen so labels sit at least ``TREND_LABEL_PX`` apart, and the last (this
    run) always — dropping the one before it when the two would be closer than that."""
    every = max(1, math.ceil(TREND_LABEL_PX / max(step, 1e-9)))
    shown = [i for i in range(0, n, every) if n - 1 - i >= every]
    return [*shown, n - 1]


def trend_chart(trend: Trend, *, width: int = 960, height: int = 260) -> Markup:
    """A line through the history, oldest left; the last point (this run) drawn hollow. The plot
    starts below the title with room for a value label over a point at the top."""
    left, right, top, bottom, pad = 56, 20, 46, 46, 28
    values = trend.values
    lo, hi, ticks = nice_ticks(max(0.0, min(values) - 0.02), min(1.0, max(values) + 0.02))
    plot_w, plot_h = width - left - right - 2 * pad, height - top - bottom
    step = plot_w / max(len(values) - 1, 1)

    def px(i: int) -> float:
        return left + pad + i * step

    def py(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    title = f"{trend.display} over the baseline history"
    out = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
           f"<title>{escape(title)}</title>",
           f'<text x="{left}" y="16" class="axis-title">{escape(title)}</text>']
    for v in ticks:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{_f(py(v))}" y2="{_f(py(v))}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{_f(py(v) + 4)}" class="tick" text-anchor="end">{v:.2f}</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{_f(px(i))},{_f(py(v))}" for i, v in enumerate(values))
    out.append(f'<path d="{path}" class="trend-line"/>')
    labelled = set(trend_labelled(len(values), step))
    for i, point in enumerate(trend.points):
        cls = "trend-point current" if point.current else "trend-point"
        label = escape(clean_text(point.label, max_len=12))
        out.append(f'<circle cx="{_f(px(i))}" cy="{_f(py(point.value))}" r="4.5" class="{cls}">'
                   f"<title>{label}: {point.value:.3f}</title></circle>")
        if i in labelled:
            out.append(f'<text x="{_f(px(i))}" y="{height - bottom + 18}" class="tick" '
                       f'text-anchor="middle">{label}</text>')
            out.append(f'<text x="{_f(px(i))}" y="{_f(py(point.value) - 9)}" class="value" '
                       f'text-anchor="middle">{point.value:.3f}</text>')
    out.append("</svg>")
    return Markup("".join(out))
