"""A failed case's reason is shown, grouped, one line, escaped: in the terminal, the PR comment
and the HTML report (render.failed_cases and the templates)."""

from __future__ import annotations

import io

from rich.console import Console

from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.render.failed_cases import failure_lines, failures
from retrieval_gate.render.html import render_html
from retrieval_gate.render.markdown import render_comment
from retrieval_gate.render.terminal import print_results
from retrieval_gate.score.assemble import assemble_results

HOSTILE = ("@octocat #12 ::error::boom\n##[error]x ##vso[task.setvariable variable=a]y \x1b[31m"
           "<script>alert(1)</script> | `x` \u202eevil" + "z" * 500)


def results_with(errors: dict[str, str]):
    cases = tuple(Case(id=f"q{i}", query=f"question {i}", gold=(f"g{i}",)) for i in range(8))
    rankings = {c.id: RankedList(error=errors[c.id]) if c.id in errors else RankedList(ids=(f"g{c.id[1:]}",))
                for c in cases}
    return assemble_results(case_set=CaseSet(cases, "cases.jsonl", "0", "jsonl"), rankings=rankings,
                            metrics=metric_specs((5,), ("hit",)), ks=(5,), headline_k=5)


def test_reasons_are_grouped_most_cases_first_with_a_few_ids():
    errors = {"q0": "python:glue:search: KeyError: 'card_id'", "q1": "timeout", "q2": "python:glue:search: KeyError: "
              "'card_id'", "q3": "python:glue:search: KeyError: 'card_id'", "q4": "python:glue:search: KeyError: "
              "'card_id'", "q5": "a", "q6": "b"}
    found = failures(results_with(errors), groups=3, ids=3)
    assert [(g.reason, g.count, g.ids, g.more_ids) for g in found.groups] == [
        ("python:glue:search: KeyError: 'card_id'", 4, ("q0", "q2", "q3"), 1),
        ("timeout", 1, ("q1",), 0), ("a", 1, ("q5",), 0)]
    assert (found.other_reasons, found.other_cases) == (1, 1)
    assert failure_lines(results_with(errors))[0] == \
        "failed (4): python:glue:search: KeyError: 'card_id' — q0, q2, q3 and 1 more"


def test_the_terminal_line_is_one_line_with_no_control_character_nor_runner_command():
    out = io.StringIO()
    print_results(results_with({"q0": HOSTILE}), console=Console(file=out, width=300, color_system=None))
    text = out.getvalue()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("failed (1)")]
    assert "\x1b" not in text and "\u202e" not in text
    assert "##[" not in text and "##vso[" not in text and "##%5Berror]" in line
    assert not any(ln.lstrip().startswith("::") for ln in text.splitlines())
    assert len(line) < 220  # the 500-character tail is cut


def test_the_comment_shows_the_reason_escaped():
    body = render_comment(results=results_with({"q0": HOSTILE, "q1": "HTTP 503 Service Unavailable"}))
    caution = body[body.index("cases failed"):].split("\n\n")[0]
    assert "> - 1 × HTTP 503 Service Unavailable (q1)" in caution
    hostile = next(ln for ln in caution.splitlines() if "octocat" in ln)
    assert "@\u200docto" in hostile and "#\u200d12" in hostile  # no mention, no issue link
    assert "<script>" not in hostile and "&lt;script&gt;" in hostile and "&#124;" in hostile
    assert "\x1b" not in hostile and "\u202e" not in hostile


def test_the_html_report_shows_the_reason_escaped():
    page = render_html(results=results_with({"q0": HOSTILE, "q1": "HTTP 503 Service Unavailable"}))
    alert = page[page.index('<ul class="failures">'):]
    alert = alert[: alert.index("</ul>")]
    assert "<li>1 × <code>HTTP 503 Service Unavailable</code> (q1)</li>" in alert
    assert "<script>" not in alert and "&lt;script&gt;" in alert
    assert "\x1b" not in alert and "\u202e" not in alert and "\n" not in alert
