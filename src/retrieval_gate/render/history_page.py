"""The history site (``retrieval-gate history --out DIR``): ``index.html`` (every suite, its badge and
trend), ``<suite>.html`` (the suite's page), rendered from ``templates/history*.html.j2`` in the
report's sandboxed, autoescaping Jinja environment, with the report's CSS and Content-Security-Policy:
self-contained, nothing loaded from anywhere. The case × refresh grid is data in the page
(``<script type="application/json">``, each case's hits run-length encoded) drawn by a few lines
of inline JS, so 3,000 cases × 500 refreshes stay well under 2 MB."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from retrieval_gate.compare.gate import format_p
from retrieval_gate.history.model import SuiteHistory
from retrieval_gate.metrics import parse_metric
from retrieval_gate.render.badge import badge_svg
from retrieval_gate.render.escape import clean_text, no_bidi
from retrieval_gate.render.history_charts import change_words, headline_chart, slice_chart
from retrieval_gate.render.html import html_environment

SUITE_TEMPLATE = "history.html.j2"
INDEX_TEMPLATE = "history_index.html.j2"
GRID_ROWS_SHOWN = 300  # rows of the case grid drawn before "show all"


def run_length(row: Sequence[int | None]) -> str:
    """``[1, 1, 0, None]`` → ``"1x2 0 .x1"``-style runs: ``<symbol><count>`` joined by spaces,
    symbols ``1`` (hit), ``0`` (miss), ``.`` (not scored at that point): ``"12 01 .1"``."""
    out: list[str] = []
    last, count = None, 0
    for value in row:
        symbol = "." if value is None else str(value)
        if symbol == last:
            count += 1
            continue
        if last is not None:
            out.append(f"{last}{count}")
        last, count = symbol, 1
    if last is not None:
        out.append(f"{last}{count}")
    return " ".join(out)


def _script_json(data: Any) -> Markup:
    """JSON safe inside ``<script type="application/json">`` (no ``<``, ``>`` or ``&`` left raw)."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))


QUESTION_CHARS = 300  # a case's question in the grid's data (shown shortened, whole on hover)


def grid_data(history: SuiteHistory, *, questions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The case × refresh grid's rows: every case whose hit changed at least once (the others
    are counted: ``steady``, and ``unscored`` — no hit at any refresh, as in a suite that does not
    measure hit@k), with its runs, flips, hits, whether it is flaky or lost for good, and its
    question (``questions``: the golden set's, by id) where known."""
    flaky, lost = set(history.flaky), {c.id for c in history.lost}
    rows, steady, unscored = [], 0, 0
    for case_id, row in history.cases.items():
        known = [v for v in row if v is not None]
        if not known:
            unscored += 1
            continue
        flips = sum(1 for a, b in itertools.pairwise(row) if a is not None and b is not None and a != b)
        if not flips and case_id not in lost:
            steady += 1
            continue
        status = "flaky" if case_id in flaky else "lost" if case_id in lost else ""
        entry = {"id": case_id, "r": run_length(row), "f": flips, "h": sum(known), "k": len(known), "s": status}
        if questions and questions.get(case_id):
            entry["q"] = clean_text(questions[case_id], max_len=QUESTION_CHARS)
        rows.append(entry)
    rows.sort(key=lambda r: ({"flaky": 0, "lost": 1, "": 2}[r["s"]], -r["f"], r["id"]))
    return {"rows": rows, "steady": steady, "unscored": unscored, "points": len(history.points),
            "shas": [p.sha[:7] for p in history.points]}


def _display(measure: str) -> str:
    return parse_metric(measure).display


def suite_context(history: SuiteHistory, *, suites: Sequence[str],
                  questions: Mapping[str, str] | None = None) -> dict[str, Any]:
    points = history.points
    measures = [(m, _display(m)) for m in history.measures]
    primary = history.measures[0] if history.measures else None
    slices = sorted({name for p in points for name in p.slices})
    return {
        "suite": history.suite, "history": history, "suites": list(suites), "measures": measures,
        "charts": [{"measure": m, "display": d,
                    "wide": headline_chart(points, measure=m, display=d, width=1180, height=240),
                    "narrow": headline_chart(points, measure=m, display=d, width=360, height=220,
                                             label_every_px=130)}
                   for m, d in measures],
        "slice_charts": [slice_chart(points, slice_name=s, measure=primary) for s in slices] if primary else [],
        "primary": primary, "primary_display": _display(primary) if primary else "", "displays": dict(measures),
        "rows": [{"index": i, "point": p, "changed": change_words(p)} for i, p in reversed(list(enumerate(points)))],
        "grid": _script_json(grid_data(history, questions=questions)), "grid_rows_shown": GRID_ROWS_SHOWN,
        "badge": Markup(badge_svg(history, standalone=False)),
        "last": points[-1] if points else None, "format_p": format_p,
    }


def render_suite_page(history: SuiteHistory, *, suites: Sequence[str],
                      questions: Mapping[str, str] | None = None) -> str:
    """``<suite>.html``; ``questions``: each case's question (the golden set's), shown with its id."""
    template = html_environment().get_template(SUITE_TEMPLATE)
    return no_bidi(template.render(**suite_context(history, suites=suites, questions=questions)))


def render_index(histories: Sequence[SuiteHistory]) -> str:
    """``index.html``: every suite with its badge and its primary measure's trend."""
    entries = []
    for h in histories:
        primary = h.measures[0] if h.measures else None
        entries.append({"suite": h.suite, "badge": Markup(badge_svg(h, standalone=False)), "n_points": len(h.points),
                        "n_flaky": len(h.flaky), "n_lost": len(h.lost), "last": h.points[-1] if h.points else None,
                        "chart": headline_chart(h.points, measure=primary, display=_display(primary), width=360,
                                                height=170, label_every_px=130) if primary else None})
    return no_bidi(html_environment().get_template(INDEX_TEMPLATE).render(entries=entries))
