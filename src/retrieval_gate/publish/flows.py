"""The action's flows: what one run does, per mode.

``auto`` picks the mode from the event (:func:`resolve_mode`):

=====================  ===============================================================
pull_request           ``pr``: eval the checkout → the gate settings and the baseline read from
                       the PR's *base sha* through the contents API (never the checkout's
                       config gate or ``baselines/``; ``publish.base_gate``) → compare →
                       sticky comment (update or create, listing gate changes the PR makes)
                       → job summary → outputs → annotations → exit 1 only if a gate is on
                       and fails. With ``audit`` on, the comment also lists the golden-set
                       findings the PR introduced (``publish.audit_step``).
push, default branch   ``update-baseline``: eval → audit → merge into the branch's baseline
                       (history kept) → write it, the audit (``<suite>.audit.json``) and the KB's
                       card manifest (``<suite>.kb.json``) back in one commit, ``[skip ci]`` (Git
                       Data API; the ref moved only if it did not move meanwhile); on 422
                       re-read, re-merge, retry (bounded, backoff).
push, other branches   ``report``: eval → job summary, HTML report and outputs. No API calls.
workflow_dispatch      ``pr`` against ``base_ref`` (or the ``pr_number``'s base, or the default
                       branch), with that ref's gate; ``mode: update-baseline`` /
                       ``write-baseline`` refresh the default branch's baseline on demand.
workflow_run           ``comment``: render and post the comment of a fork PR's run from its
                       validated data (``publish.fork_comment``).
=====================  ===============================================================

``update-baseline`` and ``write-baseline`` (which writes a ``results_file`` made by another job,
so the job holding ``contents: write`` runs no evaluation) write only under ``push`` to the
default branch or ``workflow_dispatch`` on it (``modes.write_refusal``): exit 2 otherwise.

Everything the flows touch comes in as arguments: the settings, an :class:`Engine` (the eval
and the audit: what needs a model, a store or the checkout's data), a factory of the forge's
API adapter (``forge.base.ForgeApi``), the
:class:`Runner` (outputs, summary, annotations), a clock and a sleep. Exit codes: 0 ok, 1 a gate failed (``pr`` only), 2
errors (raised as named errors for ``cli.main`` to report).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.artifacts.baseline import baseline_from_text, kb_manifest_text, manifest_from_text
from retrieval_gate.artifacts.run_files import parse_results
from retrieval_gate.baseline.update import no_rankings_problem
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate_slices import check_comparable
from retrieval_gate.compare.model import gate_fails
from retrieval_gate.errors import BaselineError, ForgeError, PermissionDenied, UsageError
from retrieval_gate.forge.base import ForgeApi
from retrieval_gate.publish.action_settings import ActionSettings
from retrieval_gate.publish.audit_step import pull_request_audit, refresh_audit_file, refresh_note
from retrieval_gate.publish.base_gate import (
    JudgedBy,
    base_suite,
    change_lines,
    change_note,
    config_path_of,
    judged_by,
)
from retrieval_gate.publish.baseline_commit import commit_baseline
from retrieval_gate.publish.engine import Engine
from retrieval_gate.publish.flow_context import MAX_WRITE_ATTEMPTS, FlowContext, Outcome
from retrieval_gate.publish.fork_comment import comment_flow, insert_after_marker
from retrieval_gate.publish.modes import Mode, may_ask_default_branch, resolve_mode, write_refusal
from retrieval_gate.publish.outputs import annotate, annotate_lost_cases, step_outputs
from retrieval_gate.publish.reports import fallback_section, links_for, write_reports, write_summary, write_top_up
from retrieval_gate.publish.runner import Runner
from retrieval_gate.publish.untrusted import RESULTS_MAX_BYTES, read_confined
from retrieval_gate.render.limits import sticky_body
from retrieval_gate.render.markdown import comment_marker, render_comment, render_summary
from retrieval_gate.score.kb_manifest import manifest_path

if TYPE_CHECKING:
    from retrieval_gate.score.kb_manifest import KbCard
    from retrieval_gate.score.results import Results


def run_action(
    *,
    settings: ActionSettings,
    engine: Engine,
    forge_api: Callable[[], ForgeApi],
    runner: Runner,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], str] | None = None,
    jitter: Callable[[], float] = random.random,
    max_attempts: int = MAX_WRITE_ATTEMPTS,
) -> Outcome:
    ctx = FlowContext(settings=settings, engine=engine, forge_api=forge_api, runner=runner, sleep=sleep,
                      jitter=jitter, max_attempts=max_attempts)
    if clock is not None:
        ctx.clock = clock
    default_branch = settings.default_branch
    needs_default = may_ask_default_branch(requested=settings.inputs.mode, event_name=settings.event_name)
    if needs_default and default_branch is None \
            and settings.branch is not None and settings.event_name in ("push", "workflow_dispatch"):
        default_branch = ctx.api().default_branch()
    plan = resolve_mode(requested=settings.inputs.mode, event_name=settings.event_name,
                        branch=settings.branch, default_branch=default_branch)
    refusal = write_refusal(mode=plan.mode, event_name=settings.event_name, branch=settings.branch,
                            default_branch=default_branch)
    if refusal is not None:
        raise UsageError(refusal)
    runner.log(f"retrieval-gate: mode {plan.mode} ({plan.reason}), suite {settings.inputs.suite}")
    flow = {Mode.PR: _pr_flow, Mode.UPDATE_BASELINE: _update_flow, Mode.WRITE_BASELINE: _write_flow,
            Mode.REPORT: _report_flow, Mode.COMMENT: comment_flow}
    return flow[plan.mode](ctx)


# -- flows ----------------------------------------------------------------------------------------


def _pr_flow(ctx: FlowContext) -> Outcome:
    s, engine, runner = ctx.settings, ctx.engine, ctx.runner
    api = ctx.api()
    ref, ref_label, pr_number = _comparison_ref(ctx, api)
    judged = _judged_by(ctx, api, ref=ref)
    results = engine.evaluate(suite_config=judged.suite_config, suite=s.inputs.suite)
    _log_completeness(ctx, results)
    baseline_path, gate = judged.baseline_path, judged.suite_config.gate
    try:
        remote = api.get_file(path=baseline_path, ref=ref)
    except ForgeError as exc:
        consequence = ("the gate is on, so this run fails rather than report a first run" if _gate_on(judged)
                       else "nothing to compare with")
        error = type(exc)(f"cannot read the baseline {baseline_path} at {ref_label}: {exc} ({consequence})")
        error.exit_code = exc.exit_code
        raise error from None
    baseline = comparison = None
    if remote is None:
        runner.log(f"no baseline at {baseline_path} on {ref_label}: first run, nothing to compare")
    else:
        source = f"{s.repository}@{ref[:12]}:{baseline_path}"
        baseline = baseline_from_text(remote.text, source=source)
        check_comparable(results=results, baseline=baseline, gate=gate, headline_k=judged.suite_config.headline_k)
        kb_before = _base_manifest(ctx, api, baseline_path=baseline_path, ref=ref, ref_label=ref_label)
        comparison = compare(results=results, baseline=baseline, gate=gate, kb_before=kb_before,
                             judgements=judged.suite_config.judgements)
    links = links_for(ctx, baseline_ref=ref if remote is not None else None, baseline_path=baseline_path)
    # the labels to ask for: the cards that decide a needs-labels verdict, else the PR run's unjudged
    # top k (none on a complete golden set)
    top_up = write_top_up(ctx, results=results, comparison=comparison, baseline=baseline)
    paths = write_reports(ctx, results=results, comparison=comparison, baseline=baseline, top_up=top_up)
    if top_up and top_up["cards"]:
        runner.log(f"label top-up: {top_up['cards']} unjudged cards in the top {top_up['k']} of "
                   f"{top_up['cases']} cases: {top_up['path']}")
    audit = None
    if s.inputs.audit:
        audit = pull_request_audit(ctx, api=api, suite_config=judged.suite_config, baseline_path=baseline_path,
                                   ref=ref, ref_label=ref_label)
    else:
        runner.log("audit: off (input audit=false)")
    section = audit.section if audit is not None else ""
    marker = comment_marker(s.inputs.suite)
    note = change_note(judged, suite=s.inputs.suite)
    rendered = render_comment(results=results, comparison=comparison, baseline=baseline,
                              links=links, max_chars=ctx.forge.limits.comment_aim - len(note),
                              audit_section=section, top_up=top_up)
    body = ctx.scrub(sticky_body(insert_after_marker(rendered, marker=marker, insert=note), marker=marker,
                                 max_chars=ctx.forge.limits.comment_chars))
    comment_file = s.out_dir / "comment.md"
    ctx.write_text(comment_file, body)
    paths["comment_file"] = comment_file.as_posix()

    comment_url, fallback, failure = "", False, None
    words = ctx.forge.words
    if not s.inputs.comment:
        runner.log("comment: off (input comment=false); the comment is in " + paths["comment_file"])
    elif pr_number is None:
        runner.log(f"no {words.change} to {words.comment} on (set pr_number to comment from a manual run)")
    else:
        try:
            posted = api.upsert_comment(number=pr_number, marker=marker, body=body)
            comment_url = posted.url
            runner.log(f"{'created' if posted.created else 'updated'} the {words.comment} on {words.change} "
                       f"{words.ref(pr_number)}: {posted.url}")
        except PermissionDenied as exc:
            fallback = True
            instead = words.no_comment.format(file=paths["comment_file"])
            why = f"{words.fork}: {exc}" if s.is_fork else str(exc)
            runner.annotate("warning", f"Could not post the {words.comment} on {words.ref(pr_number)} ({why}). "
                            f"The job passes; {instead}.")
        except ForgeError as exc:
            failure = exc

    summary = note + render_summary(results=results, comparison=comparison, baseline=baseline, links=links,
                                    audit_section=section, top_up=top_up)
    if fallback:
        summary += fallback_section(body=body, words=words, pr_number=pr_number, comment_file=paths["comment_file"])
    write_summary(ctx, markdown=summary, shorter=body)
    outputs = step_outputs(results=results, comparison=comparison, mode=Mode.PR,
                           verdict=None if remote is not None else "no-baseline")
    outputs.update(paths)
    outputs.update(comment_url=comment_url, baseline_path=baseline_path, baseline_ref=ref,
                   audit_file=audit.local if audit is not None else "")
    runner.set_outputs(outputs)
    for line in change_lines(judged):
        runner.annotate("warning", line, title="retrieval-gate: gate settings changed")
    annotate(runner, comparison=comparison)
    cases_input = results.inputs.get("cases")
    annotate_lost_cases(runner, comparison=comparison, cases_file=cases_input.path if cases_input is not None else None)
    if failure is not None:
        raise failure
    code = 1 if comparison is not None and gate_fails(comparison) else 0
    return Outcome(mode=Mode.PR, exit_code=code, outputs=outputs)


def _write_flow(ctx: FlowContext) -> Outcome:
    """``write-baseline``: the baseline job of the split workflow. It runs no evaluation: it reads
    the ``results_file`` another job (with no write token) made, confined and size-capped,
    validates it, and merges it into the branch's baseline as ``update-baseline`` does."""
    s = ctx.settings
    if s.inputs.results_file is None:
        raise UsageError("mode write-baseline needs the results_file input (results.json of the eval job)")
    raw = read_confined(s.inputs.results_file, workspace=s.workspace, max_bytes=RESULTS_MAX_BYTES,
                        what="results_file")
    results = parse_results(raw, source=Path(s.inputs.results_file))
    if results.suite != s.inputs.suite:
        raise UsageError(f"{s.inputs.results_file}: results of suite {results.suite!r}, but this step writes the "
                         f"baseline of suite {s.inputs.suite!r}")
    if (problem := no_rankings_problem(results)) is not None:  # a zero baseline measures nothing
        raise UsageError(f"{s.inputs.results_file}: {problem}")
    ctx.runner.log(f"write-baseline: {s.inputs.results_file} ({results.completeness.expected} cases), no evaluation")
    return _update_flow(ctx, results=results, mode=Mode.WRITE_BASELINE)


def _update_flow(ctx: FlowContext, *, results: Results | None = None, mode: Mode = Mode.UPDATE_BASELINE) -> Outcome:
    s, runner = ctx.settings, ctx.runner
    branch = s.branch
    if branch is None:
        raise UsageError(f"{mode} writes to the branch that was evaluated, but this run's ref is "
                         f"{s.ref or 'unset'!r}, not refs/heads/<branch>")
    api = ctx.api()
    if results is None:
        results = _evaluate(ctx)
    audit = refresh_audit_file(ctx) if s.inputs.audit else None
    beside = {audit.path: audit.text} if audit is not None else {}
    if results.kb_cards is not None:  # the KB's card manifest, in the same commit as the baseline
        beside[manifest_path(s.baseline_path)] = kb_manifest_text(results.kb_cards, suite=results.suite)
    write = commit_baseline(ctx, api=api, results=results, branch=branch, beside=beside or None)
    old = write.previous
    comparison = compare(results=results, baseline=old, gate=s.suite_config.gate,
                         judgements=s.suite_config.judgements) if old is not None else None
    # The JUnit file against the baseline this refresh just accepted: no accepted loss stays a failure
    # that a later merge request's widget would call "fixed".
    accepted = baseline_from_text(write.text, source=f"{s.repository}@{branch}:{s.baseline_path}")
    paths = write_reports(ctx, results=results, comparison=comparison, baseline=old,
                          junit_comparison=compare(results=results, baseline=accepted, gate=s.suite_config.gate,
                                                   judgements=s.suite_config.judgements))
    baseline_file = s.out_dir / "baseline.json"
    ctx.write_text(baseline_file, write.text)
    if write.commit and s.baseline_path not in write.changed:
        note = f"Baseline `{s.baseline_path}` on `{branch}` already holds these results."
    elif write.commit:
        note = (f"Baseline `{s.baseline_path}` updated on `{branch}` in commit `{write.commit[:12]}`"
                f"{f' after {write.attempts} attempts (concurrent writers)' if write.attempts > 1 else ''}.")
    else:
        note = f"Baseline `{s.baseline_path}` on `{branch}` already holds these results; nothing written."
    if s.inputs.audit:
        note += " " + refresh_note(audit, commit=write.commit, changed=write.changed, baseline_path=s.baseline_path)
    runner.log(note.replace("`", ""))
    links = links_for(ctx, baseline_ref=branch)
    summary = render_summary(results=results, comparison=comparison, baseline=old, links=links)
    write_summary(ctx, markdown=f"> {note}\n\n{summary}")
    outputs = step_outputs(results=results, comparison=comparison, mode=mode,
                           verdict=None if old is not None else "no-baseline")
    outputs.update(paths)
    outputs.update(baseline_path=s.baseline_path, baseline_ref=branch,
                   baseline_commit=write.commit if s.baseline_path in write.changed else "",
                   baseline_file=baseline_file.as_posix(), audit_file=audit.local if audit is not None else "",
                   audit_commit=write.commit if audit is not None and audit.path in write.changed else "")
    runner.set_outputs(outputs)
    annotate(runner, comparison=comparison, gate_applies=False)
    return Outcome(mode=mode, exit_code=0, outputs=outputs)


def _report_flow(ctx: FlowContext) -> Outcome:
    results = _evaluate(ctx)
    paths = write_reports(ctx, results=results, comparison=None, baseline=None)
    links = links_for(ctx, baseline_ref=None)
    write_summary(ctx, markdown=render_summary(results=results, comparison=None, baseline=None, links=links))
    outputs = step_outputs(results=results, comparison=None, mode=Mode.REPORT, verdict="none")
    outputs.update(paths)
    ctx.runner.set_outputs(outputs)
    return Outcome(mode=Mode.REPORT, exit_code=0, outputs=outputs)


# -- steps ----------------------------------------------------------------------------------------


def _evaluate(ctx: FlowContext) -> Results:
    s = ctx.settings
    results = ctx.engine.evaluate(suite_config=s.suite_config, suite=s.inputs.suite)
    _log_completeness(ctx, results)
    return results


def _log_completeness(ctx: FlowContext, results: Results) -> None:
    c = results.completeness
    ctx.runner.log(f"eval: {c.expected} cases ({c.scored} scored, {c.no_gold} no-gold, {c.failed} failed)")


def _judged_by(ctx: FlowContext, api: ForgeApi, *, ref: str) -> JudgedBy:
    """The PR's eval settings with the gate of the config file at ``ref`` (read through the API)."""
    s = ctx.settings
    config_path = config_path_of(s)
    remote = api.get_file(path=config_path, ref=ref)
    base = base_suite(remote.text if remote is not None else None, settings=s, ref=ref)
    judged = judged_by(settings=s, base=base, base_has_config=remote is not None)
    where = f"{config_path} at {ref[:12]}" if remote is not None else f"defaults ({config_path} absent at {ref[:12]})"
    ctx.runner.log(f"gate settings: from {where}; eval settings: from the checkout")
    return judged


def _base_manifest(ctx: FlowContext, api: ForgeApi, *, baseline_path: str, ref: str,
                   ref_label: str) -> dict[str, KbCard] | None:
    """The KB manifest beside the baseline at the base (never the checkout's copy), or None —
    then the comparison cannot say which cards the PR added, removed or edited."""
    path = manifest_path(baseline_path)
    try:
        remote = api.get_file(path=path, ref=ref)
        if remote is None:
            ctx.runner.log(f"no KB manifest at {path} on {ref_label}: which cards the PR changed is unknown "
                           "until the baseline is refreshed")
            return None
        source = f"{ctx.settings.repository}@{ref[:12]}:{path}"
        return manifest_from_text(remote.text, source=source)  # outside the limits: a note
    except (ForgeError, BaselineError) as exc:
        ctx.runner.annotate("warning", f"KB manifest not used: {exc}", title="retrieval-gate: KB manifest")
        return None


def _gate_on(judged: JudgedBy) -> bool:
    gate = judged.suite_config.gate
    return gate.fail_on_regression or bool(gate.floors)


def _comparison_ref(ctx: FlowContext, api: ForgeApi) -> tuple[str, str, int | None]:
    """(ref to read the baseline at, a label for messages, the PR to comment on)."""
    s = ctx.settings
    words = ctx.forge.words
    if s.base_sha and s.place.verify_base and s.pr_number is not None:
        # the environment's base is a variable the change's own pipeline file can set: the API decides
        pull = api.get_pull(number=s.pr_number)
        if pull.base_sha != s.base_sha:
            raise UsageError(f"the base commit of {words.change} {words.ref(s.pr_number)} is {pull.base_sha[:12]} "
                             f"(its diff_refs, through the API), but this job's environment says {s.base_sha[:12]}: "
                             "refused (the pipeline file may not choose what the change is judged against)")
        return pull.base_sha, f"the base {pull.base_sha[:12]}", s.pr_number
    if s.base_sha:
        return s.base_sha, f"the base {s.base_sha[:12]}", s.pr_number
    if s.inputs.base_ref:
        return s.inputs.base_ref, s.inputs.base_ref, s.inputs.pr_number
    if s.pr_number is not None:
        pull = api.get_pull(number=s.pr_number)
        return pull.base_sha, f"the base {pull.base_sha[:12]} of {words.ref(s.pr_number)}", s.pr_number
    branch = s.default_branch or api.default_branch()
    return branch, f"the default branch {branch}", None
