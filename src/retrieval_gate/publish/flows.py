"""The action's flows: what one run does, per mode.

``auto`` picks the mode from the event (:func:`resolve_mode`):

=====================  ===============================================================
pull_request           ``pr``: eval the checkout → baseline read from the PR's *base sha*
                       through the contents API (never the checkout's ``baselines/``) →
                       compare → sticky comment (update or create) → job summary → outputs
                       → annotations → exit 1 only if a gate is on and fails.
push, default branch   ``update-baseline``: eval → merge into the branch's baseline (history
                       kept) → write it back through the contents API with the blob sha,
                       ``[skip ci]``; on 409/422 re-read, re-merge, retry (bounded, backoff).
push, other branches   ``report``: eval → job summary, HTML report and outputs. No API calls.
workflow_dispatch      ``pr`` against ``base_ref`` (or the ``pr_number``'s base, or the default
                       branch); ``mode: update-baseline`` refreshes the baseline on demand.
workflow_run           ``comment``: post a comment file made by a fork PR's run (the
                       two-workflow pattern), after checking the PR's head is the run's head.
=====================  ===============================================================

Everything the flows touch comes in as arguments: the settings, an :class:`Engine` (eval,
baseline, compare, render), a factory for the GitHub adapter, the :class:`Runner` (outputs,
summary, annotations), a clock and a sleep. Exit codes: 0 ok, 1 a gate failed (``pr`` only), 2
errors (raised as named errors for ``cli.main`` to report).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from retrieval_gate.errors import ConflictError, GitHubError, InputError, PermissionDenied, Problem, UsageError
from retrieval_gate.files import write_json_atomic, write_text_atomic
from retrieval_gate.publish.action_settings import ActionSettings
from retrieval_gate.publish.engine import Engine
from retrieval_gate.publish.runner import Runner

if TYPE_CHECKING:
    from retrieval_gate.compare.model import Baseline, Comparison
    from retrieval_gate.publish.github import PostedComment, PullInfo, RemoteFile
    from retrieval_gate.score.results import Results

COMMENT_LIMIT = 65_536  # GitHub's maximum comment body, in characters
COMMENT_MAX_CHARS = 65_000  # what we ask the renderer for (room for our notes)
MAX_WRITE_ATTEMPTS = 5
HEADLINE_MEASURES = ("hit", "recall", "ndcg")
# Every output any mode writes; action.yml declares exactly these (checked by a test).
OUTPUT_NAMES = (
    "mode", "verdict", "regressed", "n", "headline_k",
    "hit_at_k", "recall_at_k", "ndcg_at_k", "delta_hit_at_k", "delta_recall_at_k", "delta_ndcg_at_k",
    "metrics_json", "comment_url", "comment_file", "results_path", "comparison_path", "html_path",
    "baseline_path", "baseline_ref", "baseline_commit", "baseline_file",
)
BAD_STATUSES = ("regressed", "below_floor")


class GitHubPort(Protocol):
    """What the flows need from GitHub (implemented by ``publish.github.GitHubRepo``)."""

    def default_branch(self) -> str: ...

    def get_file(self, *, path: str, ref: str) -> RemoteFile | None: ...

    def put_file(self, *, path: str, text: str, branch: str, message: str, expected_sha: str | None) -> str: ...

    def upsert_comment(self, *, issue_number: int, marker: str, body: str) -> PostedComment: ...

    def get_pull(self, *, number: int) -> PullInfo: ...


@dataclass(frozen=True)
class Plan:
    mode: str  # pr | update-baseline | report | comment
    reason: str


@dataclass
class Outcome:
    mode: str
    exit_code: int
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Context:
    settings: ActionSettings
    engine: Engine
    github: Callable[[], GitHubPort]
    runner: Runner
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], str] = lambda: datetime.now(UTC).replace(microsecond=0).isoformat()
    jitter: Callable[[], float] = random.random
    max_attempts: int = MAX_WRITE_ATTEMPTS
    _gh: GitHubPort | None = None

    def gh(self) -> GitHubPort:
        if self._gh is None:
            if not self.settings.repository:
                raise UsageError("GITHUB_REPOSITORY is not set: the pr, update-baseline and comment modes "
                                 "need the GitHub API (run inside GitHub Actions, or use mode: report)")
            self._gh = self.github()
        return self._gh


# -- mode -----------------------------------------------------------------------------------------


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


def run_action(
    *,
    settings: ActionSettings,
    engine: Engine,
    github: Callable[[], GitHubPort],
    runner: Runner,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], str] | None = None,
    jitter: Callable[[], float] = random.random,
    max_attempts: int = MAX_WRITE_ATTEMPTS,
) -> Outcome:
    ctx = Context(settings=settings, engine=engine, github=github, runner=runner, sleep=sleep,
                  jitter=jitter, max_attempts=max_attempts)
    if clock is not None:
        ctx.clock = clock
    default_branch = settings.default_branch
    if settings.inputs.mode == "auto" and settings.event_name == "push" and default_branch is None:
        default_branch = ctx.gh().default_branch()
    plan = resolve_mode(requested=settings.inputs.mode, event_name=settings.event_name,
                        branch=settings.branch, default_branch=default_branch)
    runner.log(f"retrieval-gate: mode {plan.mode} ({plan.reason}), suite {settings.inputs.suite}")
    flow = {"pr": _pr_flow, "update-baseline": _update_flow, "report": _report_flow, "comment": _comment_flow}
    return flow[plan.mode](ctx)


# -- flows ----------------------------------------------------------------------------------------


def _pr_flow(ctx: Context) -> Outcome:
    s, engine, runner = ctx.settings, ctx.engine, ctx.runner
    gh = ctx.gh()
    results = _evaluate(ctx)
    ref, ref_label, pr_number = _comparison_ref(ctx, gh)
    remote = gh.get_file(path=s.baseline_path, ref=ref)
    baseline = comparison = None
    if remote is None:
        runner.log(f"no baseline at {s.baseline_path} on {ref_label}: first run, nothing to compare")
    else:
        baseline = engine.parse_baseline(text=remote.text, source=f"{s.repository}@{ref[:12]}:{s.baseline_path}")
        comparison = engine.compare(results=results, baseline=baseline, gate=s.suite.gate)
    links = _links(s, baseline_ref=ref if remote is not None else None)
    paths = _write_reports(ctx, results=results, comparison=comparison, baseline=baseline)
    marker = engine.marker(suite=s.inputs.suite)
    body = sticky_body(engine.render_comment(results=results, comparison=comparison, baseline=baseline,
                                             links=links, max_chars=COMMENT_MAX_CHARS), marker=marker)
    comment_file = s.out_dir / "comment.md"
    write_text_atomic(comment_file, body)
    paths["comment_file"] = comment_file.as_posix()

    comment_url, fallback, failure = "", False, None
    if not s.inputs.comment:
        runner.log("comment: off (input comment=false); the comment is in " + paths["comment_file"])
    elif pr_number is None:
        runner.log("no pull request to comment on (set pr_number to comment from workflow_dispatch)")
    else:
        try:
            posted = gh.upsert_comment(issue_number=pr_number, marker=marker, body=body)
            comment_url = posted.url
            runner.log(f"{'created' if posted.created else 'updated'} the sticky comment on #{pr_number}: {posted.url}")
        except PermissionDenied as exc:
            fallback = True
            why = "a pull request from a fork gets a read-only token" if s.is_fork else "the token may not comment"
            runner.annotate("warning", f"Could not comment on #{pr_number} ({why}: {exc}). The comment is in the "
                            f"job summary and in {paths['comment_file']} (output comment_file); see the "
                            "workflow_run pattern in docs/action.md to post it.")
        except GitHubError as exc:
            failure = exc

    summary = engine.render_summary(results=results, comparison=comparison, baseline=baseline, links=links)
    if fallback:
        summary += fallback_section(body=body, pr_number=pr_number, comment_file=paths["comment_file"])
    _write_summary(ctx, summary, shorter=body)
    outputs = step_outputs(results=results, comparison=comparison, mode="pr",
                           verdict=None if remote is not None else "no-baseline")
    outputs.update(paths)
    outputs.update(comment_url=comment_url, baseline_path=s.baseline_path, baseline_ref=ref)
    runner.set_outputs(outputs)
    _annotate(runner, comparison)
    if failure is not None:
        raise failure
    code = 1 if comparison is not None and comparison.verdict == "fail" else 0
    return Outcome(mode="pr", exit_code=code, outputs=outputs)


def _update_flow(ctx: Context) -> Outcome:
    s, engine, runner = ctx.settings, ctx.engine, ctx.runner
    branch = s.branch
    if branch is None:
        raise UsageError(f"update-baseline writes to the branch that was evaluated, but GITHUB_REF is "
                         f"{s.ref or 'unset'!r}, not refs/heads/<branch>")
    gh = ctx.gh()
    results = _evaluate(ctx)
    write = write_baseline(ctx, gh=gh, results=results, branch=branch)
    old = write.previous
    comparison = engine.compare(results=results, baseline=old, gate=s.suite.gate) if old is not None else None
    paths = _write_reports(ctx, results=results, comparison=comparison, baseline=old)
    baseline_file = s.out_dir / "baseline.json"
    write_text_atomic(baseline_file, write.text)
    if write.commit:
        note = (f"Baseline `{s.baseline_path}` updated on `{branch}` in commit `{write.commit[:12]}`"
                f"{f' after {write.attempts} attempts (concurrent writers)' if write.attempts > 1 else ''}.")
    else:
        note = f"Baseline `{s.baseline_path}` on `{branch}` already holds these results; nothing written."
    runner.log(note.replace("`", ""))
    links = _links(s, baseline_ref=branch)
    summary = engine.render_summary(results=results, comparison=comparison, baseline=old, links=links)
    _write_summary(ctx, f"> {note}\n\n{summary}")
    outputs = step_outputs(results=results, comparison=comparison, mode="update-baseline",
                           verdict=None if old is not None else "no-baseline")
    outputs.update(paths)
    outputs.update(baseline_path=s.baseline_path, baseline_ref=branch, baseline_commit=write.commit,
                   baseline_file=baseline_file.as_posix())
    runner.set_outputs(outputs)
    _annotate(runner, comparison, gate_applies=False)
    return Outcome(mode="update-baseline", exit_code=0, outputs=outputs)


def _report_flow(ctx: Context) -> Outcome:
    s, engine = ctx.settings, ctx.engine
    results = _evaluate(ctx)
    paths = _write_reports(ctx, results=results, comparison=None, baseline=None)
    links = _links(s, baseline_ref=None)
    _write_summary(ctx, engine.render_summary(results=results, comparison=None, baseline=None, links=links))
    outputs = step_outputs(results=results, comparison=None, mode="report", verdict="none")
    outputs.update(paths)
    ctx.runner.set_outputs(outputs)
    return Outcome(mode="report", exit_code=0, outputs=outputs)


def _comment_flow(ctx: Context) -> Outcome:
    """Post a comment file (made by a fork PR's read-only run) as the sticky comment. The file is
    untrusted data: it is only ever posted as a comment body, capped at GitHub's limit, under our
    marker, and only to the PR whose head is the head of the run that made it."""
    s, runner = ctx.settings, ctx.runner
    number = s.inputs.pr_number
    if number is None:
        raise UsageError("mode comment needs the pr_number input")
    if s.inputs.comment_file is None:
        raise UsageError("mode comment needs the comment_file input")
    path = Path(s.inputs.comment_file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), None, f"cannot read the comment file: {exc}")) from None
    gh = ctx.gh()
    expected_head = s.workflow_run_head_sha
    if expected_head is not None:
        pull = gh.get_pull(number=number)
        if pull.head_sha != expected_head:
            raise UsageError(f"pull request #{number}'s head is {pull.head_sha[:12]} but the workflow run was for "
                             f"{expected_head[:12]}: refusing to post (stale or mismatched pr_number)")
    marker = ctx.engine.marker(suite=s.inputs.suite)
    body = sticky_body(text, marker=marker)
    posted = gh.upsert_comment(issue_number=number, marker=marker, body=body)
    runner.log(f"{'created' if posted.created else 'updated'} the sticky comment on #{number}: {posted.url}")
    _write_summary(ctx, f"Posted the retrieval-gate comment to #{number}: {posted.url}\n")
    outputs = {"mode": "comment", "comment_url": posted.url, "comment_file": path.as_posix()}
    runner.set_outputs(outputs)
    return Outcome(mode="comment", exit_code=0, outputs=outputs)


# -- steps ----------------------------------------------------------------------------------------


def _evaluate(ctx: Context) -> Results:
    s = ctx.settings
    results = ctx.engine.evaluate(config=s.suite, suite=s.inputs.suite)
    c = results.completeness
    ctx.runner.log(f"eval: {c.expected} cases ({c.scored} scored, {c.no_gold} no-gold, {c.failed} failed)")
    return results


def _comparison_ref(ctx: Context, gh: GitHubPort) -> tuple[str, str, int | None]:
    """(ref to read the baseline at, a label for messages, the PR to comment on)."""
    s = ctx.settings
    if s.base_sha:
        return s.base_sha, f"the base {s.base_sha[:12]}", s.pr_number
    if s.inputs.base_ref:
        return s.inputs.base_ref, s.inputs.base_ref, s.inputs.pr_number
    if s.inputs.pr_number is not None:
        pull = gh.get_pull(number=s.inputs.pr_number)
        return pull.base_sha, f"the base {pull.base_sha[:12]} of #{s.inputs.pr_number}", s.inputs.pr_number
    branch = s.default_branch or gh.default_branch()
    return branch, f"the default branch {branch}", None


@dataclass(frozen=True)
class BaselineWrite:
    commit: str  # "" when nothing was written (the branch already holds this content)
    attempts: int
    previous: Baseline | None  # the baseline merged into (for the summary's comparison)
    text: str


def write_baseline(ctx: Context, *, gh: GitHubPort, results: Results, branch: str) -> BaselineWrite:
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
        text = engine.dumps_baseline(baseline=updated)
        if remote is not None and remote.text == text:
            return BaselineWrite(commit="", attempts=attempt, previous=previous, text=text)
        try:
            commit = gh.put_file(path=s.baseline_path, text=text, branch=branch, message=message,
                                 expected_sha=current_sha)
            return BaselineWrite(commit=commit, attempts=attempt, previous=previous, text=text)
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


def _write_reports(ctx: Context, *, results: Results, comparison: Comparison | None,
                   baseline: Baseline | None) -> dict[str, str]:
    """results.json, comparison.json (when compared) and report.html under out_dir; their paths."""
    out = ctx.settings.out_dir
    paths = {"results_path": (out / "results.json").as_posix(), "comparison_path": "",
             "html_path": (out / "report.html").as_posix()}
    write_json_atomic(out / "results.json", results.to_json_data())
    if comparison is not None:
        write_json_atomic(out / "comparison.json", comparison.model_dump(mode="json"))
        paths["comparison_path"] = (out / "comparison.json").as_posix()
    html = ctx.engine.render_html(results=results, comparison=comparison, baseline=baseline)
    write_text_atomic(out / "report.html", html)
    return paths


def _write_summary(ctx: Context, markdown: str, *, shorter: str | None = None) -> None:
    """The job summary, in full. Over GitHub's 1 MiB limit, the full text goes to
    ``out_dir/summary.md``; the summary then holds ``shorter`` (the size-bounded comment, when
    there is one) and says where the full text is."""
    if ctx.runner.append_summary(markdown):
        return
    full = ctx.settings.out_dir / "summary.md"
    write_text_atomic(full, markdown)
    pointer = (f"The full summary is over GitHub's 1 MiB limit; it is in `{full.as_posix()}` "
               "(upload it as an artifact).\n")
    if shorter is None or not ctx.runner.append_summary(f"> {pointer}\n{shorter}"):
        ctx.runner.append_summary(pointer)
    ctx.runner.annotate("warning", f"job summary over 1 MiB: written to {full.as_posix()} instead")


def _links(s: ActionSettings, *, baseline_ref: str | None) -> dict[str, str]:
    links: dict[str, str] = {}
    if s.run_url:
        links["run"] = s.run_url
    if baseline_ref and s.repository:
        links["baseline"] = f"{s.server_url.rstrip('/')}/{s.repository}/blob/{baseline_ref}/{s.baseline_path}"
    return links


def _annotate(runner: Runner, comparison: Comparison | None, *, gate_applies: bool = True) -> None:
    """``::warning`` per regressed / below-floor row; ``::error`` per gate failure."""
    if comparison is None:
        return
    for row in comparison.rows:
        if row.status in BAD_STATUSES:
            runner.annotate("warning", row_message(row), title=f"retrieval-gate: {row.metric} {row.status}")
    if gate_applies and comparison.verdict == "fail":
        for failure in comparison.failures or ["the retrieval gate failed"]:
            runner.annotate("error", failure, title="retrieval-gate: gate failed")


# -- pure helpers ---------------------------------------------------------------------------------


def sticky_body(text: str, *, marker: str) -> str:
    """The comment body: the marker first (how the sticky comment is found again), at most
    GitHub's 65,536 characters."""
    body = text if marker in text else f"{marker}\n{text}"
    if len(body) > COMMENT_LIMIT:
        notice = "\n\n> ✂️ Cut to fit GitHub's comment size limit; the full report is in the job summary.\n"
        body = body[: COMMENT_LIMIT - len(notice)]
        body = body[: body.rfind("\n") + 1] if "\n" in body else body
        body = body.rstrip() + notice
        if marker not in body:
            body = f"{marker}\n{body[: COMMENT_LIMIT - len(marker) - 1]}"
    return body


def fallback_section(*, body: str, pr_number: int | None, comment_file: str) -> str:
    """Appended to the job summary when the comment could not be posted."""
    return (f"\n\n---\n\n**The PR comment could not be posted** to #{pr_number} (read-only token, e.g. a pull "
            f"request from a fork). It is in `{comment_file}` (output `comment_file`); the "
            "`workflow_run` pattern in docs/action.md posts it.\n\n<details><summary>Comment text</summary>\n\n"
            f"{body}\n</details>\n")


def row_message(row: Any) -> str:
    """One line for a regressed row: metric, slice, baseline → current, delta, n, uncertainty."""
    parts = [f"{row.metric} on {row.slice}: {_fmt(row.baseline) or '–'} → {_fmt(row.current) or '–'}"]
    if row.delta is not None:
        parts.append(f"Δ {row.delta:+.4f}")
    parts.append(f"n={row.n}")
    if row.ci is not None:
        parts.append(f"95% CI [{row.ci[0]:+.4f}, {row.ci[1]:+.4f}]")
    if row.p_value is not None:
        parts.append(f"p={row.p_value:.3g}")
    if row.status == "below_floor" and row.floor is not None:
        parts.append(f"floor {row.floor:.4f}")
    return ", ".join(parts)


def step_outputs(*, results: Results, comparison: Comparison | None, mode: str,
                 verdict: str | None = None) -> dict[str, str]:
    """The step's outputs (all strings): headline metrics at the headline k and their deltas,
    n, verdict (pass | fail | no-baseline | none), regressed, and every overall metric as JSON."""
    k = results.headline_k
    overall = results.aggregates.get("overall", {})
    rows = {row.metric: row for row in comparison.rows if row.slice == "overall"} if comparison else {}
    out: dict[str, str] = {"mode": mode, "headline_k": str(k)}
    for measure in HEADLINE_MEASURES:
        name = f"{measure}@{k}"
        cell = overall.get(name)
        row = rows.get(name)
        out[f"{measure}_at_k"] = _fmt(cell.value) if cell is not None else ""
        out[f"delta_{measure}_at_k"] = _fmt(row.delta) if row is not None and row.delta is not None else ""
    hit = overall.get(f"hit@{k}")
    out["n"] = str(hit.n if hit is not None else results.completeness.scored)
    out["verdict"] = verdict or (comparison.verdict if comparison is not None else "none")
    out["regressed"] = "true" if comparison is not None and comparison.regressed else "false"
    metrics: dict[str, Any] = {}
    for name, cell in sorted(overall.items()):
        entry: dict[str, Any] = {"value": cell.value, "n": cell.n}
        row = rows.get(name)
        if row is not None:
            entry.update(baseline=row.baseline, delta=row.delta, status=row.status, n_paired=row.n)
        metrics[name] = entry
    out["metrics_json"] = json.dumps(metrics, sort_keys=True)
    return out


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
