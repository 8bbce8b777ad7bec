"""``comment`` mode: post the sticky comment for a fork's pull request, from a privileged
``workflow_run`` job, without relaying anything the fork wrote.

The fork's read-only run uploads *data* — ``results.json`` and (when it compared)
``comparison.json`` — never Markdown to relay. This job

1. checks the run: the event's ``workflow_run.head_sha`` and ``head_repository`` are required,
   the PR's head commit must be that sha and its head repository that repository — otherwise
   exit 2 and nothing is posted (a stale or forged ``pr_number``);
2. reads each file confined (``publish.untrusted``: a regular file, no symlink followed, inside
   the workspace, size-capped) and validates it against our schemas (``artifacts.run_files``); the
   suite must be this step's suite;
3. renders the comment with our own templates (every field escaped), with a first line saying
   it was rendered from a fork's run and — as in ``pr`` mode — the gate settings the PR changes
   (the config file at its base and head commits, read through the API), scrubs the token and
   ACTIONS_* values, and posts it. The golden-set audit section is left out with a one-line note
   (``FORK_AUDIT_NOTE``): the fork's findings are not relayed.
"""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.artifacts.run_files import parse_comparison, parse_results
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.publish.base_gate import base_suite, change_note, config_path_of, judged_by
from retrieval_gate.publish.flow_context import FlowContext, Outcome
from retrieval_gate.publish.modes import Mode
from retrieval_gate.publish.reports import write_summary
from retrieval_gate.publish.untrusted import COMPARISON_MAX_BYTES, RESULTS_MAX_BYTES, read_confined
from retrieval_gate.render.escape import md_text
from retrieval_gate.render.limits import sticky_body
from retrieval_gate.render.markdown import comment_marker, render_comment
from retrieval_gate.settings import SuiteConfig

# The fork's audit is not relayed: its findings would be the fork's words, computed by the fork's
# code, and this job reads no data of the fork beyond the validated results and comparison.
FORK_AUDIT_NOTE = ("not shown for a pull request from a fork (this job relays no audit of the fork's run); "
                   "the pull request's own run lists the findings it introduced in its job summary.")


def comment_flow(ctx: FlowContext) -> Outcome:
    s, runner = ctx.settings, ctx.runner
    number = s.inputs.pr_number
    if number is None:
        raise UsageError("mode comment needs the pr_number input")
    if s.inputs.results_file is None:
        raise UsageError("mode comment needs the results_file input (results.json of the pull request's run)")
    head_sha, head_repo = s.place.relayed_head_sha, s.place.relayed_head_repo
    if head_sha is None or head_repo is None:
        raise UsageError("mode comment runs on a workflow_run event whose payload names the run's head_sha and "
                         "head_repository; this event lacks them, so nothing is posted")
    results = parse_results(read_confined(s.inputs.results_file, workspace=s.workspace,
                                          max_bytes=RESULTS_MAX_BYTES, what="results_file"),
                            source=Path(s.inputs.results_file))
    comparison = None
    if s.inputs.comparison_file is not None:
        comparison = parse_comparison(read_confined(s.inputs.comparison_file, workspace=s.workspace,
                                                    max_bytes=COMPARISON_MAX_BYTES, what="comparison_file"),
                                      source=Path(s.inputs.comparison_file))
    if results.suite != s.inputs.suite:
        raise InputError(Problem(s.inputs.results_file, None, f"results of suite {results.suite!r}, but this step "
                                 f"posts suite {s.inputs.suite!r}"))
    if comparison is not None and comparison.suite != results.suite:
        raise InputError(Problem(s.inputs.comparison_file or "", None, f"a comparison of suite {comparison.suite!r} "
                                 f"with results of suite {results.suite!r}"))
    api = ctx.api()
    pull = api.get_pull(number=number)
    if pull.head_sha != head_sha:
        raise UsageError(f"pull request #{number}'s head is {pull.head_sha[:12]} but the workflow run was for "
                         f"{head_sha[:12]}: refusing to post (stale or mismatched pr_number)")
    if pull.head_repo != head_repo:
        raise UsageError(f"pull request #{number}'s head repository is {pull.head_repo or 'gone'} but the workflow "
                         f"run was for {head_repo}: refusing to post (mismatched pr_number)")
    note = _gate_note(ctx, base_sha=pull.base_sha, head_sha=head_sha)
    run_url = _run_url(ctx)
    links = {"run": run_url} if run_url else {}
    preface = (f"> ℹ️ Rendered by this repository's workflow from the data of a fork's run "
               f"({'[' + md_text('pull request run') + '](' + run_url + ')' if run_url else 'pull request run'}, "
               f"head {md_text(head_sha[:12])} of {md_text(head_repo)}). The numbers were computed by the pull "
               "request's own code and checked here only for their form.\n\n")
    marker = comment_marker(s.inputs.suite)
    section = ""
    if s.inputs.audit:
        from retrieval_gate.render.audit import render_audit_note  # rich and the audit's model: on use only

        section = render_audit_note(FORK_AUDIT_NOTE)
    rendered = render_comment(results=results, comparison=comparison, baseline=None, links=links,
                              max_chars=ctx.forge.limits.comment_aim - len(preface) - len(note),
                              audit_section=section)
    body = ctx.scrub(sticky_body(insert_after_marker(rendered, marker=marker, insert=preface + note), marker=marker,
                                 max_chars=ctx.forge.limits.comment_chars))
    comment_file = s.out_dir / "comment.md"
    ctx.write_text(comment_file, body)
    posted = api.upsert_comment(number=number, marker=marker, body=body)
    words = ctx.forge.words
    runner.log(f"{'created' if posted.created else 'updated'} the {words.comment} on {words.change} "
               f"{words.ref(number)}: {posted.url}")
    write_summary(ctx, markdown=f"Posted the retrieval-gate {words.comment} to {words.ref(number)}: {posted.url}\n")
    outputs = {"mode": Mode.COMMENT.value, "comment_url": posted.url, "comment_file": comment_file.as_posix()}
    runner.set_outputs(outputs)
    return Outcome(mode=Mode.COMMENT, exit_code=0, outputs=outputs)


def insert_after_marker(text: str, *, marker: str, insert: str) -> str:
    """``text`` with ``insert`` right after the marker line (or first, without one)."""
    if not insert:
        return text
    at = text.find(marker)
    if at < 0:
        return insert + text
    end = text.find("\n", at)
    end = len(text) if end < 0 else end + 1
    head = text[:end] if text[:end].endswith("\n") else text[:end] + "\n"
    return head + insert + text[end:]


def _gate_note(ctx: FlowContext, *, base_sha: str, head_sha: str) -> str:
    """The notice of gate settings the PR changes, from the config file at the PR's base and head
    commits (read through the API, parsed, never run). Without the file at the head commit the
    note is left out rather than guessed: the API may not resolve a fork's commit."""
    s = ctx.settings
    api = ctx.api()
    config_path = config_path_of(s)
    head = api.get_file(path=config_path, ref=head_sha)
    if head is None:
        ctx.runner.log(f"{config_path} not readable at the PR's head {head_sha[:12]}: no gate-change notice")
        return ""
    base = api.get_file(path=config_path, ref=base_sha)
    proposed = base_suite(head.text, settings=s, ref=head_sha) or SuiteConfig()
    judged = judged_by(settings=s, base=base_suite(base.text if base is not None else None, settings=s, ref=base_sha),
                       base_has_config=base is not None, proposed=proposed)
    return change_note(judged, suite=s.inputs.suite)


def _run_url(ctx: FlowContext) -> str | None:
    """The fork run's page (the forge builds it from the run's id alone, and our server and repository)."""
    return ctx.settings.place.relayed_run_url
