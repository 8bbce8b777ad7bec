"""``sweep.json`` → one self-contained HTML page (pure): the verdict, the points' table and, per
numeric axis, the knee's chart — each value's Δ against the curve's best with its paired
interval, the knee being the cheapest value (fewest chunks) whose interval reaches 0 — beside the cost. No script, no
outside resource; every text from the sweep is escaped."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from retrieval_gate.sweep.render import settings_text, table_rows, verdict_lines

_STYLE = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; --good:#1a7f37; --bad:#cf222e; --blue:#0969da; }
body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg); margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
p.sub, li { color: var(--muted); }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: var(--soft); }
svg text { font-size: 11px; fill: var(--muted); }
"""


def _chart(curve: Mapping[str, Any], knee: Any) -> str:
    """Δ vs the best value (y) at each value (x, evenly spaced), whiskers = the paired interval."""
    items = curve["points"]
    width, height, left, top, bottom = 640, 220, 60, 16, 40
    lows = [it["vs_best"]["ci"][0] if it["vs_best"] else 0.0 for it in items]
    highs = [it["vs_best"]["ci"][1] if it["vs_best"] else 0.0 for it in items]
    lo, hi = min([*lows, -0.01]), max([*highs, 0.01])
    span = hi - lo

    def y(v: float) -> float:
        return top + (hi - v) / span * (height - top - bottom)

    step = (width - left - 60) / max(1, len(items) - 1) if len(items) > 1 else 0
    parts = [f'<svg width="{width}" height="{height}" role="img" xmlns="http://www.w3.org/2000/svg">',
             f'<line x1="{left}" x2="{width - 10}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#d1d9e0"/>',
             f'<text x="4" y="{y(0) + 4:.1f}">Δ 0</text>', f'<text x="4" y="{y(hi) + 4:.1f}">{hi:+.3f}</text>',
             f'<text x="4" y="{y(lo) + 4:.1f}">{lo:+.3f}</text>']
    for i, (item, low, high) in enumerate(zip(items, lows, highs, strict=True)):
        x = left + i * step
        delta = item["vs_best"]["delta"] if item["vs_best"] else 0.0
        colour = "#1a7f37" if item["value"] == knee else "#0969da"
        parts += [f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y(low):.1f}" y2="{y(high):.1f}" stroke="{colour}"/>',
                  f'<circle cx="{x:.1f}" cy="{y(delta):.1f}" r="4" fill="{colour}"/>',
                  f'<text x="{x:.1f}" y="{height - 22}" text-anchor="middle">{escape(str(item["value"]))}'
                  f'{" (knee)" if item["value"] == knee else ""}</text>',
                  f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle">{item["cost"]["chunks"]} chunks</text>']
    parts.append("</svg>")
    return "".join(parts)


def render_sweep_html(sweep: Mapping[str, Any]) -> str:
    header, rows = table_rows(sweep)
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>Sweep of {escape(sweep['suite'])}</title><style>{_STYLE}</style></head><body><main>",
           f"<h1>Sweep of suite {escape(sweep['suite'])}</h1>",
           f'<p class="sub">{escape(sweep["metric"])} · {len(sweep["points"])} points · reference '
           f"{escape(settings_text(sweep['reference']))} · split {sweep['split']['selection']} selection / "
           f"{sweep['split']['confirmation']} confirmation cases (seed {sweep['split']['seed']})</p>", "<ul>"]
    out += [f"<li>{escape(line.strip())}</li>" for line in verdict_lines(sweep)]
    out += ["</ul>", "<h2>Points</h2>", "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows]
    out.append("</table>")
    for axis, curve in sweep["curves"].items():
        knee = sweep["knee"].get(axis)
        title = f"knee {knee}" if knee is not None else (curve.get("knee_note") or "no knee")
        out += [f"<h2>{escape(axis)}: {escape(title)}</h2>",
                f'<p class="sub">Δ {escape(sweep["metric"])} against the best value ({escape(str(curve["best"]))}) '
                f"with its paired interval (uncorrected); other keys held at {escape(settings_text(curve['held']))}. "
                "The knee is the cheapest value (fewest chunks) whose interval reaches 0.</p>", _chart(curve, knee)]
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"
