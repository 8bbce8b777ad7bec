"""Writing the refreshed baseline back to a branch, safely under concurrent merges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval_gate.errors import ConflictError
from retrieval_gate.publish.flow_context import FlowContext, GitHubPort

if TYPE_CHECKING:
    from retrieval_gate.compare.model import Baseline
    from retrieval_gate.score.results import Results


@dataclass(frozen=True)
class BaselineCommit:
    """The result of writing a baseline to a branch through the contents API."""

    commit: str  # "" when nothing was written (the branch already holds this content)
    attempts: int
    previous: Baseline | None  # the baseline merged into (for the summary's comparison)
    text: str


def commit_baseline(ctx: FlowContext, *, gh: GitHubPort, results: Results, branch: str) -> BaselineCommit:
    """Read the branch's baseline, merge the results into it, write it back with the blob sha.

    A 409/422 means another run wrote first: re-read, re-merge (so its history entry survives)
    and retry, at most ``max_attempts`` times, waiting 1, 2, 4, 8 … s (+ up to 1 s jitter)
    between tries. A conflict while the file did not change is not a race (a protected branch,
    a ruleset): it stops at the second such answer."""
    s, engine = ctx.settings, ctx.engine
    timestamp = ctx.clock()
    message = f"retrieval-gate: update {s.baseline_path} for {s.sha[:12] or branch} [skip ci]"
    failed_sha: str | None = None
    not_a_race = 0
    attempt = 0
    while True:
        attempt += 1
        remote = gh.get_file(path=s.baseline_path, ref=branch)
        current_sha = remote.sha if remote is not None else None
        if attempt > 1 and current_sha == failed_sha:
            not_a_race += 1
        previous = (engine.parse_baseline(text=remote.text, source=f"{s.repository}@{branch}:{s.baseline_path}")
                    if remote is not None else None)
        updated = engine.update_baseline(baseline=previous, results=results, sha=s.sha or None,
                                         ref=s.ref or None, timestamp=timestamp)
        text = ctx.scrub(engine.dumps_baseline(baseline=updated))
        if remote is not None and remote.text == text:
            return BaselineCommit(commit="", attempts=attempt, previous=previous, text=text)
        try:
            commit = gh.put_file(path=s.baseline_path, text=text, branch=branch, message=message,
                                 expected_sha=current_sha)
            return BaselineCommit(commit=commit, attempts=attempt, previous=previous, text=text)
        except ConflictError as exc:
            if attempt >= ctx.max_attempts or not_a_race >= 1:
                hint = ("the file did not change between tries, so this is not a concurrent write: is the "
                        f"branch protected, or does a ruleset block {s.baseline_path}?" if not_a_race
                        else "too many concurrent writers; add a concurrency group to the workflow")
                raise ConflictError(f"{exc} — gave up after {attempt} attempts ({hint})") from None
            failed_sha = current_sha
            wait = min(2 ** (attempt - 1), 30) + ctx.jitter()
            ctx.runner.log(f"baseline write conflicted ({exc}); re-reading {s.baseline_path} and merging again "
                           f"in {wait:.1f}s (attempt {attempt + 1}/{ctx.max_attempts})")
            ctx.sleep(wait)
