"""Pure parts of the action's flows: mode selection, the sticky body, outputs, annotation text."""

from __future__ import annotations

import pytest

from retrieval_gate.compare.model import ComparisonRow
from retrieval_gate.forge.github import GitHub
from retrieval_gate.publish.modes import resolve_mode
from retrieval_gate.publish.outputs import row_message
from retrieval_gate.render.limits import sticky_body

MARKER = "<!-- retrieval-gate:default -->"

COMMENT_LIMIT = GitHub.limits.comment_chars


@pytest.mark.parametrize(
    ("requested", "event", "branch", "default", "mode"),
    [
        ("auto", "pull_request", None, "main", "pr"),
        ("auto", "pull_request_target", None, "main", "pr"),
        ("auto", "push", "main", "main", "update-baseline"),
        ("auto", "push", "feature", "main", "report"),
        ("auto", "push", None, "main", "report"),  # a tag push
        ("auto", "workflow_dispatch", "main", "main", "pr"),
        ("auto", "workflow_run", "main", "main", "comment"),
        ("auto", "schedule", "main", "main", "report"),
        ("update-baseline", "workflow_dispatch", "release", "main", "update-baseline"),
        ("report", "pull_request", None, "main", "report"),
    ],
)
def test_resolve_mode(requested, event, branch, default, mode):
    assert resolve_mode(requested=requested, event_name=event, branch=branch, default_branch=default).mode == mode


def test_sticky_body_puts_the_marker_first_when_missing():
    assert sticky_body("hello", marker=MARKER, max_chars=COMMENT_LIMIT) == f"{MARKER}\nhello"
    assert sticky_body(f"x\n{MARKER}\ny", marker=MARKER, max_chars=COMMENT_LIMIT) == f"x\n{MARKER}\ny"


def test_sticky_body_is_cut_to_githubs_limit_at_a_line_end_and_keeps_the_marker():
    text = MARKER + "\n" + "".join(f"row {i:06d} | 0.500 |\n" for i in range(5000))
    body = sticky_body(text, marker=MARKER, max_chars=COMMENT_LIMIT)
    assert len(body) <= COMMENT_LIMIT and body.startswith(MARKER)
    assert body.endswith("the full report is in the job summary.\n")
    kept = body.split("\n\n> ✂️")[0]
    assert kept.endswith("| 0.500 |")  # whole lines only


def test_row_message_names_metric_slice_values_delta_n_and_uncertainty():
    row = ComparisonRow(slice="locale=pt-BR", metric="hit@5", baseline=0.8, current=0.7, delta=-0.1, n=40,
                        ci=(-0.2, -0.025), p_value=0.012, status="regressed")
    assert row_message(row) == ("hit@5 on locale=pt-BR: 0.8000 → 0.7000, Δ -0.1000, n=40, "
                                "95% CI [-0.2000, -0.0250], p=0.012")
    judged = row.model_copy(update={"ci_level": 1 - 0.05 / 3})  # a judged row's Bonferroni level
    assert "98.3% CI [-0.2000, -0.0250]" in row_message(judged)
