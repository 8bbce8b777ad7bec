"""Rendering the audit: the coverage grid's layout, the PR section (only new findings, escaped,
bounded), the terminal matrix and the self-contained HTML page."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from retrieval_gate.audit import AuditParams, run_audit
from retrieval_gate.audit.model import Coverage, CoverageCell, Finding
from retrieval_gate.models import Card, Case
from retrieval_gate.render.audit import (
    coverage_grid,
    print_audit,
    render_audit_html,
    render_audit_note,
    render_audit_section,
)


def cell(kind, locale, n, detectable=False):
    return CoverageCell(values={"kind": kind, "locale": locale}, n=n, n_gold=n, mde=0.5, detectable=detectable)


COVERAGE = Coverage(fields=["kind", "locale"], max_drop=0.02, alpha=0.05, power=0.8, metric="hit@5",
                    cells=[cell("adversarial", "en-US", 2), cell("golden", "en-US", 30), cell("golden", "pt-BR", 9)],
                    empty_cells=[{"kind": "adversarial", "locale": "pt-BR"}], required_n=9812)


def test_grid_rows_are_all_fields_but_the_last_and_empty_cells_are_none():
    grid = coverage_grid(COVERAGE)
    assert grid.row_fields == ["kind"] and grid.col_field == "locale" and grid.cols == ["en-US", "pt-BR"]
    assert [(key, [c.n if c else None for c in cells]) for key, cells in grid.rows] == [
        (["adversarial"], [2, None]), (["golden"], [30, 9])]


def test_terminal_matrix():
    report = run_audit(cases=[Case(id="1", query="q", gold=("a",), locale="en-US"),
                              Case(id="2", query="q", gold=("a",), locale="pt-BR", kind="adversarial")],
                       entries=[Card(id="a", text="some card text that is long enough")], params=AuditParams())
    buffer = io.StringIO()
    print_audit(report, Console(file=buffer, width=160, no_color=True))
    text = buffer.getvalue()
    assert "coverage: cases per cell (kind × locale)" in text
    # adversarial × en-US and golden × pt-BR are empty; the others hold 1 case each, underpowered
    assert "│ adversarial │            – │          1 · │" in text
    assert "│ golden      │          1 · │            – │" in text


def finding(i, severity="low", reason="r"):
    return Finding(kind="duplicate_query", severity=severity, cases=(f"q{i}", f"q{i + 1}"), reason=reason)


def test_section_lists_new_findings_escaped_and_bounded():
    hostile = finding(0, "high", reason="pipe | in it, @team ping, <script>x</script>")
    text = render_audit_section(introduced=[hostile, *(finding(i) for i in range(1, 60))], resolved=2, total=80)
    assert text.startswith("<details><summary>🧪 Golden-set audit: 60 new findings in this PR (1 high) · 2 resolved")
    assert "<script>" not in text and "@team" not in text and "pipe &#124; in it" in text
    assert text.count("| duplicate_query |") == 50 and "10 more in `audit.json`." in text
    assert "(80 in all)" in text and text.rstrip().endswith("</details>")


def test_no_section_when_nothing_changed():
    assert render_audit_section(introduced=[], resolved=0, total=5) == ""


def test_html_is_self_contained_and_escaped():
    report = run_audit(cases=[Case(id="<b>1</b>", query="q", gold=("a",))],
                       entries=[Card(id="a", text="")], params=AuditParams())
    html = render_audit_html(report)
    assert "<b>1</b>" not in html and "&lt;b&gt;1&lt;/b&gt;" in html
    assert "empty_gold_card" in html and "Coverage matrix" in html
    assert "src=" not in html and "href=" not in html and "https://" not in html


def test_results_html_report_shows_the_audit_matrix_only_when_given():
    from retrieval_gate.metrics import metric_specs
    from retrieval_gate.models import CaseSet
    from retrieval_gate.render.html import render_html
    from retrieval_gate.score.assemble import assemble_results

    cases = [Case(id="1", query="q", gold=("a",), locale="en-US"), Case(id="2", query="q", gold=("a",), locale="pt-BR")]
    results = assemble_results(case_set=CaseSet(tuple(cases), "c.jsonl", "sha", "jsonl"), rankings={},
                               metrics=metric_specs((5,), ("hit",)), ks=(5,))
    report = run_audit(cases=cases, entries=[Card(id="a", text="long enough card text here")], params=AuditParams())
    assert "Coverage matrix" not in render_html(results=results)
    html = render_html(results=results, audit=report)
    assert "<summary>Coverage matrix (golden-set audit)</summary>" in html
    assert "<th>locale=en-US</th><th>locale=pt-BR</th>" in html and html.count('class="n low"') == 2


@pytest.mark.parametrize(("text", "expected"), [
    ("no base audit yet: it is written on the next baseline refresh.",
     "<sub>🧪 Golden-set audit: no base audit yet: it is written on the next baseline refresh.</sub>\n"),
    # a reason quoting the PR's data is escaped like every comment value: no mention, no HTML
    ("does not parse (@octocat <b>x</b>)",
     "<sub>🧪 Golden-set audit: does not parse (@\u200doctocat &lt;b&gt;x&lt;/b&gt;)</sub>\n"),
])
def test_audit_note_is_one_escaped_line(text, expected):
    assert render_audit_note(text) == expected
