"""The action's modes — their names, written once — and which one a run takes, from the
``mode`` input and the event. Pure: every rule about modes lives here."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Mode(StrEnum):
    """The ``mode`` input's values (action.yml lists the same). A ``Mode`` equals its string."""

    AUTO = "auto"
    PR = "pr"
    UPDATE_BASELINE = "update-baseline"
    WRITE_BASELINE = "write-baseline"
    REPORT = "report"
    COMMENT = "comment"


MODES: tuple[str, ...] = tuple(m.value for m in Mode)
# The modes that write the baseline; the events under which they may.
WRITE_MODES = frozenset({Mode.UPDATE_BASELINE, Mode.WRITE_BASELINE})
WRITE_EVENTS = ("push", "workflow_dispatch")
# The modes that run beside a write token and read files another run made.
PRIVILEGED_MODES = frozenset({Mode.COMMENT, Mode.WRITE_BASELINE})


@dataclass(frozen=True)
class Plan:
    """The mode to run and why (logged first)."""

    mode: Mode
    reason: str


def resolve_mode(*, requested: str, event_name: str, branch: str | None, default_branch: str | None) -> Plan:
    """The mode to run. ``auto``: pull_request(_target) → pr; push to the default branch →
    update-baseline; push elsewhere → report; workflow_dispatch → pr (compare); workflow_run →
    comment; anything else (schedule, …) → report."""
    if requested != Mode.AUTO:
        return Plan(Mode(requested), "mode input")
    if event_name in ("pull_request", "pull_request_target"):
        return Plan(Mode.PR, f"{event_name} event")
    if event_name == "push":
        if branch is not None and default_branch is not None and branch == default_branch:
            return Plan(Mode.UPDATE_BASELINE, f"push to the default branch {branch}")
        return Plan(Mode.REPORT, f"push to {branch or 'a non-branch ref'} (not the default branch)")
    if event_name == "workflow_dispatch":
        return Plan(Mode.PR, "workflow_dispatch: compare with the baseline")
    if event_name == "workflow_run":
        return Plan(Mode.COMMENT, "workflow_run: post the comment of a pull request's run")
    return Plan(Mode.REPORT, f"{event_name or 'no'} event")


def is_privileged(*, requested: str, event_name: str) -> bool:
    """Whether the run reads another run's files beside a write token: a privileged mode asked
    for, or ``auto`` under ``workflow_run`` (which resolves to ``comment``)."""
    return requested in PRIVILEGED_MODES or (requested == Mode.AUTO and event_name == "workflow_run")


def may_ask_default_branch(*, requested: str, event_name: str) -> bool:
    """Whether choosing or checking the mode needs the default branch's name: a write mode, or
    ``auto`` under ``push`` (default branch → update-baseline, else report)."""
    return requested in WRITE_MODES or (requested == Mode.AUTO and event_name == "push")


def write_refusal(*, mode: str, event_name: str, branch: str | None, default_branch: str | None) -> str | None:
    """Why ``mode`` may not write the baseline in this run, or None when it may: only ``push``
    to the default branch and ``workflow_dispatch`` on it write. Under ``pull_request_target``
    or ``workflow_run`` GITHUB_REF is the default branch too, but the run acts for someone else
    (a PR's author, another run's artifact): checking the ref alone would let them write."""
    if mode not in WRITE_MODES:
        return None
    if event_name not in WRITE_EVENTS:
        return (f"mode {mode} writes the baseline only on push to the default branch or workflow_dispatch on it; "
                f"refused under the {event_name or 'unknown'} event (nothing written)")
    if branch is None:
        return (f"mode {mode} writes to the branch that was evaluated, but GITHUB_REF is not "
                "refs/heads/<branch> (a tag?); nothing written")
    if default_branch is None or branch != default_branch:
        return (f"mode {mode} writes the baseline of the default branch ({default_branch or 'unknown'}) only; "
                f"refused on {branch} (nothing written)")
    return None
