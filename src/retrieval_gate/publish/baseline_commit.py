"""Writing a refreshed file back to a branch, safely under concurrent merges: the baseline
(merged into the branch's copy, history kept) and, beside it, the suite's golden-set audit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval_gate.errors import ConflictError
from retrieval_gate.publish.flow_context import FlowContext, GitHubPort

if TYPE_CHECKING:
    from retrieval_gate.compare.model import Baseline
    from retrieval_gate.publish.github import RemoteFile
    from retrieval_gate.score.results import Results


@dataclass(frozen=True)
class FileCommit:
    """The result of writing one file to a branch through the contents API."""

    commit: str  # "" when nothing was written (the branch already holds this content)
    attempts: int
    text: str


@dataclass(frozen=True)
class BaselineCommit(FileCommit):
    previous: Baseline | None = None  # the baseline merged into (for the summary's comparison)


def commit_file(ctx: FlowContext, *, gh: GitHubPort, path: str, branch: str, message: str,
                render: Callable[[RemoteFile | None], str], again: str = "writing it again") -> FileCommit:
    """Read ``path`` on ``branch``, make its new text with ``render(current file or None)``, and
    write it back with the blob sha; nothing is written when the text is unchanged.

    A 409/422 means another run wrote first: re-read, re-render (the baseline merges again, so
    the other run's history entry survives) and retry, at most ``max_attempts`` times, waiting 1,
    2, 4, 8 … s (+ up to 1 s jitter) between tries. A conflict while the file did not change is
    not a race (a protected branch, a ruleset): it stops at the second such answer."""
    failed_sha: str | None = None
    not_a_race = 0
    attempt = 0
    while True:
        attempt += 1
        remote = gh.get_file(path=path, ref=branch)
        current_sha = remote.sha if remote is not None else None
        if attempt > 1 and current_sha == failed_sha:
            not_a_race += 1
        text = ctx.scrub(render(remote))
        if remote is not None and remote.text == text:
            return FileCommit(commit="", attempts=attempt, text=text)
        try:
            commit = gh.put_file(path=path, text=text, branch=branch, message=message, expected_sha=current_sha)
            return FileCommit(commit=commit, attempts=attempt, text=text)
        except ConflictError as exc:
            if attempt >= ctx.max_attempts or not_a_race >= 1:
                hint = ("the file did not change between tries, so this is not a concurrent write: is the "
                        f"branch protected, or does a ruleset block {path}?" if not_a_race
                        else "too many concurrent writers; add a concurrency group to the workflow")
                raise ConflictError(f"{exc} — gave up after {attempt} attempts ({hint})") from None
            failed_sha = current_sha
            wait = min(2 ** (attempt - 1), 30) + ctx.jitter()
            ctx.runner.log(f"write of {path} conflicted ({exc}); re-reading {path} and {again} "
                           f"in {wait:.1f}s (attempt {attempt + 1}/{ctx.max_attempts})")
            ctx.sleep(wait)


def commit_baseline(ctx: FlowContext, *, gh: GitHubPort, results: Results, branch: str) -> BaselineCommit:
    """Read the branch's baseline, merge the results into it, write it back (``commit_file``)."""
    s, engine = ctx.settings, ctx.engine
    timestamp = ctx.clock()
    previous: list[Baseline | None] = [None]

    def merged(remote: RemoteFile | None) -> str:
        previous[0] = (engine.parse_baseline(text=remote.text, source=f"{s.repository}@{branch}:{s.baseline_path}")
                       if remote is not None else None)
        updated = engine.update_baseline(baseline=previous[0], results=results, sha=s.sha or None,
                                         ref=s.ref or None, timestamp=timestamp)
        return engine.dumps_baseline(baseline=updated)

    write = commit_file(ctx, gh=gh, path=s.baseline_path, branch=branch, render=merged, again="merging again",
                        message=f"retrieval-gate: update {s.baseline_path} for {s.sha[:12] or branch} [skip ci]")
    return BaselineCommit(commit=write.commit, attempts=write.attempts, text=write.text, previous=previous[0])
