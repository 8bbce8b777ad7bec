"""A shields-style badge of a suite's last refresh (``badge-<suite>.svg``): ``hit@5 | 0.927 · n=55``,
its right half coloured by the last step's paired test — blue: a significant gain, vermillion: a
significant drop, purple: no significant change, light grey: no step yet. Pure; text escaped, no URL."""

from __future__ import annotations

from markupsafe import escape

from retrieval_gate.history.model import SuiteHistory
from retrieval_gate.metrics import parse_metric
from retrieval_gate.render.escape import clean_text

LABEL_COLOUR = "#555"
# the right half: blue up, vermillion down, purple no significant change, light grey no step yet —
# each apart from the others and from the label's dark grey (tests/unit/test_render_badge_colours.py)
BADGE_COLOURS = {"up": "#0072B2", "down": "#C23B00", "flat": "#6B4FA0", "none": "#9f9f9f"}
CHAR_PX = 6.6  # Verdana 11 px: about this wide per character (shields' own estimate)


def badge_state(history: SuiteHistory) -> tuple[str, str, str]:
    """``(label, value, state)``: the primary measure, its last value with n, up / down / flat / none."""
    if not history.points or not history.measures:
        return "retrieval", "no data", "none"
    measure = history.measures[0]
    point = history.points[-1]
    label = parse_metric(measure).display if measure else "retrieval"
    value = f"{point.headline[measure]:.3f} · n={point.n:,}"
    step = point.step.get(measure)
    if step is None:
        return label, value, "none"
    if not step.significant:
        return label, value, "flat"
    return label, value, "up" if step.delta > 0 else "down"


def badge_svg(history: SuiteHistory, *, standalone: bool = True) -> str:
    """The badge; ``standalone``: a file of its own (with the SVG namespace an ``<img>`` needs),
    else inline in a page (no namespace: no URL in the page)."""
    label, value, state = badge_state(history)
    label, value = clean_text(label, max_len=40), clean_text(value, max_len=40)
    lw, vw = round(len(label) * CHAR_PX + 12), round(len(value) * CHAR_PX + 12)
    width = lw + vw
    colour = BADGE_COLOURS[state]
    words = {"up": "improved (significant)", "down": "dropped (significant)", "flat": "no significant change",
             "none": "first refresh"}[state]
    text = escape(f"{label}: {value} ({words})")
    namespace = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ' class="badge"'
    return (f'<svg{namespace} width="{width}" height="20" role="img" aria-label="{text}">'
            f"<title>{text}</title>"
            f'<rect width="{lw}" height="20" fill="{LABEL_COLOUR}"/>'
            f'<rect x="{lw}" width="{vw}" height="20" fill="{colour}"/>'
            f'<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
            f'<text x="{lw / 2:.1f}" y="14">{escape(label)}</text>'
            f'<text x="{lw + vw / 2:.1f}" y="14">{escape(value)}</text></g></svg>\n')
