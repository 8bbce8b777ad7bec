"""Writing the refreshed baseline — and the suite's audit beside it — back to a branch in one
commit, safely under concurrent merges (``commit_rendered_files``, over the forge's one-commit
``ForgeApi.commit_files``: GitHub's Git Data API,
GitLab's Commits API, Azure DevOps' pushes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval_gate.artifacts.baseline import baseline_from_text, baseline_text
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.errors import ConflictError
from retrieval_gate.forge.base import ForgeApi, Words
from retrieval_gate.history.steps import pr_number
from retrieval_gate.publish.flow_context import FlowContext

if TYPE_CHECKING:
    from retrieval_gate.baseline.model import Baseline
    from retrieval_gate.forge.base import RemoteFile
    from retrieval_gate.score.results import Results


@dataclass(frozen=True)
class FilesCommit:
    """The result of writing files to a branch."""

    commit: str  # "" when nothing was written (the branch already holds this content)
    attempts: int
    texts: dict[str, str]  # path → the text the branch now holds
    changed: tuple[str, ...]  # the paths the commit wrote


def refresh_message(changed: Iterable[str], *, sha: str, branch: str, measured_message: str, words: Words) -> str:
    """The refresh commit's message: what it updates, for which commit and — when that commit's
    message names one (``history.steps.pr_number``) — which pull / merge request, so the history
    names the PR from this commit alone: ``retrieval-gate: update baselines/default.json for
    1a2b3c4d5e6f (pull request #12) [skip ci]``."""
    number = pr_number(measured_message)
    which = f" ({words.change} {words.ref(number)})" if number is not None else ""
    return f"retrieval-gate: update {' and '.join(changed)} for {sha[:12] or branch}{which} [skip ci]"


def commit_rendered_files(ctx: FlowContext, *, api: ForgeApi, branch: str, paths: Sequence[str],
                 render: Callable[[Mapping[str, RemoteFile | None]], Mapping[str, str]]) -> FilesCommit:
    """Read the branch's head and ``paths`` at that commit, make their new texts with ``render``
    (path → current file or None), and commit the ones that changed, in one commit whose parent
    is the head that was read; nothing is written when none changed.

    The branch is moved only if it still points at that head (never forced). A refusal means
    another run wrote first: re-read, re-render (the baseline merges again, so the other run's
    history entry survives) and retry, at most ``max_attempts`` times, waiting 1, 2, 4, 8 … s (+ up
    to 1 s jitter) between tries. A refusal while the branch did not move is not a race (a
    protected branch, a ruleset): it stops at the second such answer."""
    s = ctx.settings
    failed_head: str | None = None
    not_a_race = 0
    attempt = 0
    while True:
        attempt += 1
        head = api.branch_head(branch=branch)
        if attempt > 1 and head == failed_head:
            not_a_race += 1
        current = {path: api.get_file(path=path, ref=head) for path in paths}
        texts = {path: ctx.scrub(text) for path, text in render(current).items()}
        changed = {path: text for path, text in texts.items()
                   if current.get(path) is None or current[path].text != text}  # type: ignore[union-attr]
        if not changed:
            return FilesCommit(commit="", attempts=attempt, texts=texts, changed=())
        message = refresh_message(changed, sha=s.sha, branch=branch, measured_message=s.place.commit_message,
                                  words=ctx.forge.words)
        try:
            commit = api.commit_files(branch=branch, parent=head, files=changed, message=message)
            return FilesCommit(commit=commit, attempts=attempt, texts=texts, changed=tuple(changed))
        except ConflictError as exc:
            if attempt >= ctx.max_attempts or not_a_race >= 1:
                hint = ("the branch did not move between tries, so this is not a concurrent write: is the "
                        f"branch protected, or does a ruleset block {', '.join(changed)}?" if not_a_race
                        else "too many concurrent writers; add a concurrency group to the workflow")
                raise ConflictError(f"{exc} — gave up after {attempt} attempts ({hint})") from None
            failed_head = head
            wait = min(2 ** (attempt - 1), 30) + ctx.jitter()
            ctx.runner.log(f"write to {branch} conflicted ({exc}); re-reading {', '.join(paths)} and merging again "
                           f"in {wait:.1f}s (attempt {attempt + 1}/{ctx.max_attempts})")
            ctx.sleep(wait)


@dataclass(frozen=True)
class BaselineCommit:
    """The result of a refresh's write: the commit, the baseline merged into, the texts."""

    commit: str  # "" when nothing was written
    attempts: int
    previous: Baseline | None  # the baseline merged into (for the summary's comparison)
    text: str  # the baseline's text on the branch
    changed: tuple[str, ...]  # the paths the commit wrote (the baseline, its audit)


def commit_baseline(ctx: FlowContext, *, api: ForgeApi, results: Results, branch: str,
                    beside: Mapping[str, str] | None = None) -> BaselineCommit:
    """Merge the results into the branch's baseline and write it back (``commit_rendered_files``), with
    ``beside`` (path → text: the suite's audit) in the same commit, each replaced whole."""
    s = ctx.settings
    timestamp = ctx.clock()
    previous: list[Baseline | None] = [None]

    def render(current: Mapping[str, RemoteFile | None]) -> dict[str, str]:
        remote = current[s.baseline_path]
        source = f"{s.repository}@{branch}:{s.baseline_path}"
        previous[0] = old = baseline_from_text(remote.text, source=source) if remote is not None else None
        if remote is not None and old is not None and s.sha and old.sha == s.sha:
            # a retried refresh of the same commit: the same numbers with the old timestamps are the
            # file unchanged, so no commit whose only change would be a timestamp
            again = update_baseline(baseline=old, results=results, sha=s.sha, ref=s.ref or None,
                                    timestamp=old.updated_at)
            if baseline_text(again) == remote.text:
                return {s.baseline_path: remote.text, **(beside or {})}
        updated = update_baseline(baseline=old, results=results, sha=s.sha or None,
                                  ref=s.ref or None, timestamp=timestamp)
        return {s.baseline_path: baseline_text(updated), **(beside or {})}

    write = commit_rendered_files(ctx, api=api, branch=branch, paths=[s.baseline_path, *(beside or {})], render=render)
    return BaselineCommit(commit=write.commit, attempts=write.attempts, previous=previous[0],
                          text=write.texts[s.baseline_path], changed=write.changed)
