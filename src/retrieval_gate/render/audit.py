"""Rendering the golden-set audit: terminal tables (rich), the collapsed PR-comment section of
the findings a PR introduced (Markdown, escaped like the comment), and a self-contained HTML
page with the coverage matrix. Pure: every function returns a string or prints to a console
it is given."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import PackageLoader, StrictUndefined, select_autoescape
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup
from rich.console import Console
from rich.table import Table
from rich.text import Text

from retrieval_gate.audit.coverage import cell_name
from retrieval_gate.audit.model import AuditReport, Coverage, CoverageCell, Finding
from retrieval_gate.render.escape import escape_controls, md_text, no_bidi
from retrieval_gate.render.markdown import markdown_environment

SECTION_TEMPLATE = "audit_section.md.j2"
HTML_TEMPLATE = "audit.html.j2"
SECTION_SHOWN = 50  # findings listed in the PR comment section; the rest are counted
TERMINAL_SHOWN = 40


@dataclass(frozen=True)
class Grid:
    """The coverage matrix laid out for display: one row per combination of every field but the
    last, one column per value of the last field; ``None`` = an empty cell."""

    row_fields: list[str]
    col_field: str
    cols: list[str]
    rows: list[tuple[list[str], list[CoverageCell | None]]]


def coverage_grid(coverage: Coverage) -> Grid:
    fields = coverage.fields
    *row_fields, col_field = fields
    cols = sorted({c.values[col_field] for c in coverage.cells})
    by_row: dict[tuple[str, ...], dict[str, CoverageCell]] = {}
    for cell in coverage.cells:
        by_row.setdefault(tuple(cell.values[f] for f in row_fields), {})[cell.values[col_field]] = cell
    rows = [(list(key), [by_row[key].get(col) for col in cols]) for key in sorted(by_row)]
    return Grid(row_fields=list(row_fields), col_field=col_field, cols=cols, rows=rows)


def cell_text(cell: CoverageCell | None) -> str:
    """``n`` (cases), ``n·`` when the cell cannot detect max_drop, ``–`` for an empty cell."""
    if cell is None:
        return "–"
    mark = "" if cell.detectable is not False else " ·"
    return f"{cell.n}{mark}"


def print_audit(report: AuditReport, console: Console, *, shown: int = TERMINAL_SHOWN) -> None:
    counts = report.counts
    console.print(f"audit: {counts['cases']} cases ({counts['cases_with_gold']} with gold), {counts['cards']} cards; "
                  f"{counts['findings']} findings: {report.by_severity['high']} high, "
                  f"{report.by_severity['medium']} medium, {report.by_severity['low']} low",
                  markup=False, highlight=False, soft_wrap=True)
    kinds = [(k, n) for k, n in report.by_kind.items() if n]
    if kinds:
        console.print("  " + " · ".join(f"{k} {n}" for k, n in kinds), markup=False, highlight=False, soft_wrap=True)
    if report.findings:
        table = Table(title=None, show_lines=False)
        for name in ("severity", "kind", "cases", "cards / cell", "reason"):
            table.add_column(name, overflow="fold")
        for f in report.findings[:shown]:
            # Text: an id is never rich markup ("[link=…]"); escape_controls: nor a control character
            cells = (_ids(f.cases), f.cell or _ids(f.cards), f.reason)
            table.add_row(f.severity, f.kind, *(Text(escape_controls(v)) for v in cells))
        console.print(table)
        if len(report.findings) > shown:
            console.print(f"… and {len(report.findings) - shown} more findings in the JSON", markup=False)
    if report.coverage is not None:
        print_coverage(report.coverage, console)
    if report.label_review is not None:
        review = report.label_review
        console.print(f"label review (k = {review.k}): {review.cases_with_unjudged} of {review.cases_reviewed} "
                      f"cases hold cards no label judges in their top {review.k}", markup=False, highlight=False)
        if review.judged:
            overall = review.judged[0]
            console.print(f"judged@{review.k}: {overall.judged:.3f} {overall.slice} (n = {overall.n}); lowest: "
                          + ", ".join(f"{j.slice} {j.judged:.3f}" for j in sorted(review.judged[1:],
                                                                                   key=lambda j: j.judged)[:3]),
                          markup=False, highlight=False, soft_wrap=True)


def print_coverage(coverage: Coverage, console: Console) -> None:
    grid = coverage_grid(coverage)
    table = Table(title=Text(escape_controls(f"coverage: cases per cell ({' × '.join(coverage.fields)})")))
    for name in grid.row_fields:
        table.add_column(name)
    for col in grid.cols:
        table.add_column(Text(escape_controls(f"{grid.col_field}={col}")), justify="right")
    for key, cells in grid.rows:
        table.add_row(*(Text(escape_controls(k)) for k in key), *(cell_text(c) for c in cells))
    console.print(table)
    console.print(f"'–' empty cell · '·' n too small to detect a drop of {coverage.max_drop:g} in {coverage.metric} "
                  f"in a paired comparison even at best (α = {coverage.alpha:g}, power {coverage.power:g}, only "
                  f"lost cases changing; about {coverage.required_n} cases per cell are needed)",
                  markup=False, highlight=False, soft_wrap=True)


def _ids(ids: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" … (+{len(ids) - limit})" if len(ids) > limit else "")


def render_audit_section(*, introduced: Sequence[Finding], resolved: int = 0, total: int = 0,
                         shown: int = SECTION_SHOWN) -> str:
    """The collapsed "golden-set audit" section of the PR comment: only the findings the PR
    introduced (``audit.model.introduced``); ``resolved``: how many of the base's it removed;
    ``total``: the PR's findings in all. Empty string when nothing was introduced or resolved."""
    if not introduced and not resolved:
        return ""
    template = markdown_environment().get_template(SECTION_TEMPLATE)
    rows = [{"severity": f.severity, "kind": f.kind, "ids": _ids(f.cases) if f.cases else (f.cell or ""),
             "cards": _ids(f.cards), "reason": f.reason} for f in introduced[:shown]]
    return template.render(rows=rows, n=len(introduced), resolved=resolved, total=total,
                           high=sum(1 for f in introduced if f.severity == "high"))


def render_audit_note(text: str) -> str:
    """The audit section as one line, when there is nothing to diff (no base audit, a base audit
    that does not parse, the audit left out): ``text`` escaped like every user-visible value."""
    return f"<sub>🧪 Golden-set audit: {md_text(text)}</sub>\n"


def _html_env() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(loader=PackageLoader("retrieval_gate.render", "templates"),
                                         autoescape=select_autoescape(default=True, default_for_string=True),
                                         undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_audit_html(report: AuditReport) -> str:
    """One self-contained page: counts, the coverage matrix, the findings, the review queue."""
    context: dict[str, Any] = {
        "report": report,
        "grid": coverage_grid(report.coverage) if report.coverage is not None else None,
        "coverage": report.coverage,
        "cell_text": cell_text,
        "cell_name": cell_name,
        "ids": _ids,
        "nbsp": Markup("&nbsp;"),
    }
    return no_bidi(_html_env().get_template(HTML_TEMPLATE).render(**context))  # bidi overrides: visible
