"""Which mode a run of the action takes, from the ``mode`` input and the event. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """The mode to run and why (logged first)."""

    mode: str  # pr | update-baseline | write-baseline | report | comment
    reason: str


def resolve_mode(*, requested: str, event_name: str, branch: str | None, default_branch: str | None) -> Plan:
    """The mode to run. ``auto``: pull_request(_target) → pr; push to the default branch →
    update-baseline; push elsewhere → report; workflow_dispatch → pr (compare); workflow_run →
    comment; anything else (schedule, …) → report."""
    if requested != "auto":
        return Plan(requested, "mode input")
    if event_name in ("pull_request", "pull_request_target"):
        return Plan("pr", f"{event_name} event")
    if event_name == "push":
        if branch is not None and default_branch is not None and branch == default_branch:
            return Plan("update-baseline", f"push to the default branch {branch}")
        return Plan("report", f"push to {branch or 'a non-branch ref'} (not the default branch)")
    if event_name == "workflow_dispatch":
        return Plan("pr", "workflow_dispatch: compare with the baseline")
    if event_name == "workflow_run":
        return Plan("comment", "workflow_run: post the comment of a pull request's run")
    return Plan("report", f"{event_name or 'no'} event")


WRITE_MODES = ("update-baseline", "write-baseline")
WRITE_EVENTS = ("push", "workflow_dispatch")


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
