"""Inline SVG charts of a suite's history (the history page). Pure functions returning markup;
every piece of text escaped with ``markupsafe.escape``; no URL of any kind.

- ``headline_chart``: one measure over the refreshes, spaced by refresh order, the dates as ticks
  (each tick a different date, none crowding another): the 95 % interval of each
  point as a band, the value as a line, a point per refresh (its title names the commit, the ref,
  n and the PR), a filled point where the paired step from the previous refresh was significant
  (blue up, vermillion down), a dashed line at every step where the settings (S) or the golden
  set (G) changed, and a short tick at the top where KB cards changed (marks closer than
  ``MARK_GAP_PX`` are one, its title naming each step);
- ``slice_chart``: a small multiple, one slice's value over the refreshes, with its last n.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from retrieval_gate.history.model import Point
from retrieval_gate.render.charts import nice_ticks
from retrieval_gate.render.escape import clean_text

MARK_LETTERS = {"settings": "S", "kb": "K", "golden set": "G"}


def _f(x: float) -> str:
    return f"{x:.1f}"


def _x_scale(points: Sequence[Point], left: float, width: float):
    """Points spaced by refresh order (refreshes come in bursts: by time, a day's four would sit on
    one pixel); the dates are the ticks."""
    if len(points) == 1:
        return lambda i: left + width / 2
    return lambda i: left + i * width / (len(points) - 1)


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
    for mx, kinds, words in _merged_marks(sub, x):
        what = escape(words)
        if kinds == ["kb"]:  # the most common step: a short tick at the top, not a line through the chart
            out.append(f'<line x1="{_f(mx)}" x2="{_f(mx)}" y1="{top - 2}" y2="{top + 6}" class="kb-tick">'
                       f"<title>{what}</title></line>")
            continue
        letters = "".join(MARK_LETTERS[k] for k in ("settings", "golden set") if k in kinds)
        out.append(f'<line x1="{_f(mx)}" x2="{_f(mx)}" y1="{top}" y2="{top + plot_h}" class="marker">'
                   f"<title>{what}</title></line>")
        out.append(f'<text x="{_f(mx)}" y="{top - 4}" class="tick mark" text-anchor="middle">{letters}</text>')
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
    for i, anchor in date_ticks([p.date[:10] for p in sub], x, every_px=label_every_px):
        out.append(f'<text x="{_f(x(i))}" y="{height - 18}" class="tick" text-anchor="{anchor}">'
                   f"{escape(sub[i].date[:10])}</text>")
        out.append(f'<text x="{_f(x(i))}" y="{height - 5}" class="tick" text-anchor="{anchor}">'
                   f"{escape(sub[i].sha[:7])}</text>")
    out.append("</svg>")
    return Markup("".join(out))


MARK_GAP_PX = 16  # marks closer than this are one mark (its title names each step it holds)


def _merged_marks(points: Sequence[Point], x) -> list[tuple[float, list[str], str]]:
    """``(x, kinds, words)`` of each mark: the steps where something changed, those within
    ``MARK_GAP_PX`` of a mark joined into it — a settings or golden-set change (a line with its
    letters) apart from the KB's (a tick), so no two marks of a kind overlap."""
    out: list[tuple[float, list[str], str]] = []
    last: dict[bool, int] = {}  # line or tick → index into out
    counts: dict[int, int] = {}
    for i, p in enumerate(points):
        kinds = p.change.kinds() if p.change is not None else []
        if not kinds:
            continue
        line = kinds != ["kb"]
        j = last.get(line)
        if j is not None and x(i) - out[j][0] < MARK_GAP_PX:
            mx, had, words = out[j]
            counts[j] = counts.get(j, 1) + 1
            merged = sorted(set(had) | set(kinds), key=list(MARK_LETTERS).index)
            more = words if counts[j] > 3 else f"{words}\n{change_words(p)}"
            out[j] = (mx, merged, more)
            continue
        last[line] = len(out)
        out.append((x(i), kinds, change_words(p)))
    return [(mx, kinds, words + (f"\n… {counts[j] - 3} more steps" if counts.get(j, 1) > 3 else ""))
            for j, (mx, kinds, words) in enumerate(out)]


def date_ticks(dates: Sequence[str], x, *, every_px: float) -> list[tuple[int, str]]:
    """``(index, anchor)`` of the points that get a date tick: the first and the last, and between
    them the first point of a new date at least ``every_px`` from the previous tick (and from the
    last): no two ticks read the same date, none crowds another."""
    if not dates:
        return []
    last_i = len(dates) - 1
    out = [(0, "start")]
    for i in range(1, last_i):
        if dates[i] == dates[i - 1] or dates[i] == dates[out[-1][0]]:
            continue
        if x(i) - x(out[-1][0]) >= every_px and x(last_i) - x(i) >= every_px:
            out.append((i, "middle"))
    if last_i > 0 and dates[last_i] != dates[out[-1][0]] and x(last_i) - x(out[-1][0]) >= every_px:
        out.append((last_i, "end"))
    return out


def _names(ids: Sequence[str], *, shown: int = 5) -> str:
    names = ", ".join(clean_text(i, max_len=40) for i in ids[:shown])
    return names + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


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
    for verb, cards in (("edited", kb.edited), ("added", kb.added), ("removed", kb.removed)):
        if cards:
            parts.append(f"KB {len(cards)} card{'s' if len(cards) != 1 else ''} {verb} ({_names(cards)})")
    if kb.unseen:
        parts.append("KB changed (no manifest to compare)")
    cases = change.cases
    for verb, ids in (("added", cases.added), ("removed", cases.removed)):
        if ids:
            parts.append(f"{len(ids)} case{'s' if len(ids) != 1 else ''} {verb} ({_names(ids)})")
    if cases.gold_changed and not cases.added and not cases.removed:
        parts.append("gold edited (the same cases; the golden set's file changed)")
    return f"{point.sha[:7]}: " + "; ".join(parts) if parts else ""


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
