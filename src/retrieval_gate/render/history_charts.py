"""Inline SVG charts of a suite's history (the history page). Pure functions returning markup;
every piece of text escaped with ``markupsafe.escape``; no URL of any kind.

- ``headline_chart``: one measure over the refreshes, x = commit date: the 95 % interval of each
  point as a band, the value as a line, a point per refresh (its title names the commit, the ref,
  n and the PR), a filled point where the paired step from the previous refresh was significant
  (blue up, vermillion down), a dashed line at every step where the settings (S) or the golden
  set (G) changed, and a short tick at the top where KB cards changed;
- ``slice_chart``: a small multiple, one slice's value over the refreshes, with its last n.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from markupsafe import Markup, escape

from retrieval_gate.history.model import Point
from retrieval_gate.render.charts import nice_ticks
from retrieval_gate.render.escape import clean_text

MARK_LETTERS = {"settings": "S", "kb": "K", "golden set": "G"}


def _f(x: float) -> str:
    return f"{x:.1f}"


def epoch(date: str) -> float:
    """An ISO 8601 date as seconds (a malformed one as 0: it sorts first, it does not crash)."""
    try:
        return datetime.fromisoformat(date.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _x_scale(points: Sequence[Point], left: float, width: float):
    times = [epoch(p.date) for p in points]
    lo, hi = min(times), max(times)
    span = hi - lo
    if span <= 0:
        return lambda i: left + width / 2 if len(points) == 1 else left + i * width / max(len(points) - 1, 1)
    return lambda i: left + (times[i] - lo) / span * width


def point_title(point: Point, *, measure: str, value: float) -> str:
    pr = f" · PR #{point.pr}" if point.pr is not None else ""
    ref = f" · {point.ref}" if point.ref else ""
    return f"{point.sha[:7]}{ref}{pr} · {point.date[:10]} · {measure} {value:.3f} · n={point.n:,}"


def headline_chart(points: Sequence[Point], *, measure: str, display: str, width: int, height: int,
                   label_every_px: int = 110) -> Markup:
    """One measure over the refreshes (module docstring)."""
    shown = [i for i, p in enumerate(points) if measure in p.headline]
    left, right, top, bottom = 46, 14, 38, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    out = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
           f"<title>{escape(display)} over {len(shown)} refreshes</title>",
           f'<text x="{left}" y="16" class="axis-title">{escape(display)}</text>']
    if not shown:
        out.append("</svg>")
        return Markup("".join(out))
    sub = [points[i] for i in shown]
    lows = [p.interval.get(measure, (p.headline[measure],) * 2)[0] for p in sub]
    highs = [p.interval.get(measure, (p.headline[measure],) * 2)[1] for p in sub]
    lo, hi, ticks = nice_ticks(max(0.0, min(lows) - 0.01), hi=min(1.0, max(highs) + 0.01))
    x = _x_scale(sub, left + 6, plot_w - 12)

    def y(v: float) -> float:
        return top + (hi - v) / max(hi - lo, 1e-9) * plot_h

    for v in ticks:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{_f(y(v))}" y2="{_f(y(v))}" class="grid"/>')
        out.append(f'<text x="{left - 5}" y="{_f(y(v) + 4)}" class="tick" text-anchor="end">{v:.2f}</text>')
    band = " ".join(f"{_f(x(i))},{_f(y(h))}" for i, h in enumerate(highs))
    band += " " + " ".join(f"{_f(x(i))},{_f(y(lw))}" for i, lw in reversed(list(enumerate(lows))))
    out.append(f'<polygon points="{band}" class="band"/>')
    last_mark = -1e9
    for i, p in enumerate(sub):
        kinds = p.change.kinds() if p.change is not None else []
        if not kinds:
            continue
        mx, what = x(i), escape(change_words(p))
        if kinds == ["kb"]:  # the most common step: a short tick at the top, not a line through the chart
            out.append(f'<line x1="{_f(mx)}" x2="{_f(mx)}" y1="{top - 2}" y2="{top + 6}" class="kb-tick">'
                       f"<title>{what}</title></line>")
            continue
        letters = "".join(MARK_LETTERS[k] for k in kinds if k != "kb")
        out.append(f'<line x1="{_f(mx)}" x2="{_f(mx)}" y1="{top}" y2="{top + plot_h}" class="marker">'
                   f"<title>{what}</title></line>")
        if mx - last_mark >= 14:
            out.append(f'<text x="{_f(mx)}" y="{top - 4}" class="tick mark" text-anchor="middle">{letters}</text>')
            last_mark = mx
    path = " ".join(f"{'M' if i == 0 else 'L'}{_f(x(i))},{_f(y(p.headline[measure]))}" for i, p in enumerate(sub))
    out.append(f'<path d="{path}" class="trend-line"/>')
    radius = 3.2 if len(sub) <= 120 else 2.2
    for i, p in enumerate(sub):
        step = p.step.get(measure)
        cls = "pt"
        if step is not None and step.significant:
            cls = "pt up" if step.delta > 0 else "pt down"
        elif len(sub) > 120:
            continue  # a dense line: only the significant steps get a dot (the table has them all)
        value = p.headline[measure]
        out.append(f'<circle cx="{_f(x(i))}" cy="{_f(y(value))}" r="{radius}" class="{cls}">'
                   f"<title>{escape(point_title(p, measure=display, value=value))}</title></circle>")
    last_label = -1e9
    for i in (*range(0, len(sub) - 1), len(sub) - 1):
        xi = x(i)
        if xi - last_label < label_every_px or (i < len(sub) - 1 and x(len(sub) - 1) - xi < label_every_px):
            continue
        anchor = "start" if i == 0 else "end" if i == len(sub) - 1 else "middle"
        out.append(f'<text x="{_f(xi)}" y="{height - 18}" class="tick" text-anchor="{anchor}">'
                   f"{escape(sub[i].date[:10])}</text>")
        out.append(f'<text x="{_f(xi)}" y="{height - 5}" class="tick" text-anchor="{anchor}">'
                   f"{escape(sub[i].sha[:7])}</text>")
        last_label = xi
    out.append("</svg>")
    return Markup("".join(out))


def change_words(point: Point) -> str:
    """What changed at a point, in words (the marker's title, the refresh table)."""
    change = point.change
    if change is None:
        return ""
    parts = []
    if change.settings:
        keys = ", ".join(f"{c.key}: {clean_text(str(c.old), max_len=40)} → {clean_text(str(c.new), max_len=40)}"
                         for c in change.settings[:4])
        parts.append(f"settings {keys}{' …' if len(change.settings) > 4 else ''}")
    kb = change.kb
    if kb.added or kb.removed or kb.edited:
        parts.append(f"KB +{len(kb.added)} −{len(kb.removed)} ~{len(kb.edited)} cards")
    elif kb.unseen:
        parts.append("KB changed (no manifest to compare)")
    cases = change.cases
    if cases.added or cases.removed or cases.gold_changed:
        parts.append(f"golden set +{len(cases.added)} −{len(cases.removed)} cases"
                     f"{', gold edited' if cases.gold_changed else ''}")
    return f"{point.sha[:7]}: " + "; ".join(parts)


def slice_chart(points: Sequence[Point], *, slice_name: str, measure: str, width: int = 300,
                height: int = 118) -> Markup:
    """One slice's ``measure`` over the refreshes, a small multiple (module docstring)."""
    shown = [p for p in points if measure in p.slices.get(slice_name, _EMPTY).headline]
    left, right, top, bottom = 30, 8, 30, 16
    plot_w, plot_h = width - left - right, height - top - bottom
    title = clean_text(slice_name, max_len=40)
    last = shown[-1].slices[slice_name] if shown else None
    out = [f'<svg class="chart small" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
           f"<title>{escape(title)}: {escape(measure)} over {len(shown)} refreshes</title>",
           f'<text x="2" y="14" class="axis-title">{escape(clean_text(slice_name, max_len=30))}</text>']
    if last is not None:
        out.append(f'<text x="{width - 2}" y="14" class="tick" text-anchor="end">'
                   f"{last.headline[measure]:.3f} · n={last.n:,}</text>")
    if len(shown) >= 1:
        values = [p.slices[slice_name].headline[measure] for p in shown]
        lo, hi, ticks = nice_ticks(max(0.0, min(values) - 0.02), hi=min(1.0, max(values) + 0.02))
        x = _x_scale(shown, left, plot_w)

        def y(v: float) -> float:
            return top + (hi - v) / max(hi - lo, 1e-9) * plot_h

        for v in (ticks[0], ticks[-1]):
            out.append(f'<line x1="{left}" x2="{width - right}" y1="{_f(y(v))}" y2="{_f(y(v))}" class="grid"/>')
            out.append(f'<text x="{left - 3}" y="{_f(y(v) + 4)}" class="tick" text-anchor="end">{v:.2f}</text>')
        path = " ".join(f"{'M' if i == 0 else 'L'}{_f(x(i))},{_f(y(v))}" for i, v in enumerate(values))
        out.append(f'<path d="{path}" class="trend-line"/>')
        ns = [p.slices[slice_name].n for p in shown]
        out.append(f'<text x="{left}" y="{height - 3}" class="tick">n {min(ns):,}–{max(ns):,}</text>'
                   if min(ns) != max(ns) else f'<text x="{left}" y="{height - 3}" class="tick">n {ns[0]:,}</text>')
    out.append("</svg>")
    return Markup("".join(out))


class _NoSlice:
    headline: dict[str, float] = {}  # noqa: RUF012


_EMPTY = _NoSlice()
