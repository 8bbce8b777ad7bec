"""The action's modes: one enum (the names action.yml lists), and the pure rules that pick and
guard them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from retrieval_gate.publish.modes import (
    MODES,
    PRIVILEGED_MODES,
    WRITE_MODES,
    Mode,
    is_privileged,
    may_ask_default_branch,
    resolve_mode,
    write_refusal,
)

ACTION = Path(__file__).resolve().parents[2] / "action.yml"


def test_the_mode_input_lists_exactly_the_enum() -> None:
    text = yaml.safe_load(ACTION.read_text(encoding="utf-8"))["inputs"]["mode"]["description"]
    assert MODES == ("auto", "pr", "update-baseline", "write-baseline", "report", "comment")
    assert all(m in text for m in MODES)
    assert Mode("write-baseline") == "write-baseline" and f"{Mode.PR}" == "pr"


def test_a_mode_asked_for_is_taken_as_given() -> None:
    for name in MODES[1:]:
        plan = resolve_mode(requested=name, event_name="push", branch="main", default_branch="main")
        assert plan.mode is Mode(name) and plan.reason == "mode input"


@pytest.mark.parametrize(("requested", "event", "expected"), [
    ("comment", "push", True), ("write-baseline", "workflow_dispatch", True), ("auto", "workflow_run", True),
    ("auto", "push", False), ("pr", "workflow_run", False), ("update-baseline", "push", False),
])
def test_privileged_runs_are_the_ones_reading_another_runs_files(requested: str, event: str, expected: bool) -> None:
    assert is_privileged(requested=requested, event_name=event) is expected


@pytest.mark.parametrize(("requested", "event", "expected"), [
    ("update-baseline", "pull_request", True), ("write-baseline", "push", True), ("auto", "push", True),
    ("auto", "pull_request", False), ("report", "push", False), ("pr", "workflow_dispatch", False),
])
def test_the_default_branch_is_needed_to_write_or_to_choose_under_push(requested: str, event: str,
                                                                        expected: bool) -> None:
    assert may_ask_default_branch(requested=requested, event_name=event) is expected


def test_only_the_write_modes_are_refused_and_only_off_the_default_branch_or_event() -> None:
    assert {Mode.UPDATE_BASELINE, Mode.WRITE_BASELINE} == WRITE_MODES
    assert {Mode.COMMENT, Mode.WRITE_BASELINE} == PRIVILEGED_MODES
    for mode in MODES:
        refusal = write_refusal(mode=mode, event_name="pull_request_target", branch="main", default_branch="main")
        assert (refusal is not None) is (mode in WRITE_MODES)
    assert write_refusal(mode="update-baseline", event_name="push", branch="main", default_branch="main") is None
    assert "refused on dev" in write_refusal(mode="write-baseline", event_name="workflow_dispatch", branch="dev",
                                             default_branch="main")
