"""The golden-set audit in the action's flows (input ``audit``, default on).

- **Refresh** (``update-baseline``, ``write-baseline``): the suite's KB and cases are audited
  with the suite's ``audit:`` settings and the audit is written next to the baseline,
  ``baselines/<suite>.json`` → ``baselines/<suite>.audit.json`` (:func:`audit_repo_path`), in the
  baseline's commit (``publish.baseline_commit``: one commit, the same conflict and retry rules);
  an unchanged audit (the file holds no time or timing) is not written.
- **Pull request** (``pr``): the PR's KB and cases are audited with the **base's** ``audit:``
  settings (``publish.base_gate.judged_by``), the base's audit is read **at the base sha** through
  the API (never the checkout's copy, which the PR may edit), and the comment gets a collapsed
  section of the findings the PR introduced (``audit.model.introduced``). No base audit, or one that does not
  parse, is a one-line note instead. Nothing here changes the exit code: findings never fail the
  gate, and an audit that cannot run is a warning.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.artifacts.run_files import audit_text, parse_audit
from retrieval_gate.audit import introduced, resolved
from retrieval_gate.errors import ForgeError, RetrievalGateError, one_line
from retrieval_gate.forge.base import ForgeApi
from retrieval_gate.publish.flow_context import FlowContext

if TYPE_CHECKING:
    from retrieval_gate.audit import AuditReport
    from retrieval_gate.settings import SuiteConfig

AUDIT_SUFFIX = ".audit.json"
LOCAL_NAME = "audit.json"  # under out_dir: the audit of the checkout, whatever the mode


def audit_repo_path(baseline_path: str) -> str:
    """Where a suite's audit lives in the repository: the baseline's path with ``.json`` replaced
    by ``.audit.json`` (``baselines/default.json`` → ``baselines/default.audit.json``)."""
    stem = baseline_path[: -len(".json")] if baseline_path.endswith(".json") else baseline_path
    return stem + AUDIT_SUFFIX


def run_suite_audit(ctx: FlowContext, *, suite_config: SuiteConfig) -> tuple[AuditReport | None, str, str]:
    """The checkout's audit, the local file it was written to (``out_dir/audit.json``) and that
    file's text, or (None, why, "") when it cannot run (bad or missing data in a job that did not
    evaluate): a warning, never a failed run. Its time is logged: a big suite takes seconds to a
    minute."""
    start = time.perf_counter()
    try:
        report = ctx.engine.audit(suite_config=suite_config)
    except RetrievalGateError as exc:
        why = ctx.scrub(one_line(exc))
        ctx.runner.annotate("warning", f"the golden-set audit could not run: {why}", title="retrieval-gate: audit")
        return None, why, ""
    seconds = time.perf_counter() - start
    local = ctx.settings.out_dir / LOCAL_NAME
    text = audit_text(report)
    ctx.write_text(local, text)
    counts = report.counts
    ctx.runner.log(f"audit: {counts['cases']} cases, {counts['cards']} cards, {counts['findings']} findings "
                   f"in {seconds:.1f} s; written to {local.as_posix()}")
    return report, local.as_posix(), text


@dataclass(frozen=True)
class AuditFile:
    """The refresh's audit, to be committed with the baseline."""

    path: str  # its repository path, beside the baseline
    text: str
    local: str  # out_dir/audit.json
    findings: int


def refresh_audit_file(ctx: FlowContext) -> AuditFile | None:
    """The checkout's audit with the suite's own settings (the branch being refreshed judges
    itself), or None when it could not run (a warning; the baseline is still written)."""
    s = ctx.settings
    report, local, text = run_suite_audit(ctx, suite_config=s.suite_config)
    if report is None:
        return None
    return AuditFile(path=audit_repo_path(s.baseline_path), text=text, local=local,
                     findings=len(report.findings))


def refresh_note(audit: AuditFile | None, *, commit: str, changed: tuple[str, ...], baseline_path: str) -> str:
    """One sentence for the refresh's job summary about the audit file."""
    if audit is None:
        return (f"The golden-set audit could not run (see the warning); `{audit_repo_path(baseline_path)}` is "
                "left as it was.")
    if audit.path in changed:
        return f"Audit `{audit.path}` ({audit.findings} findings) written in the same commit `{commit[:12]}`."
    return f"Audit `{audit.path}` unchanged; nothing written for it."


@dataclass(frozen=True)
class PullAudit:
    section: str  # the comment's audit section (Markdown; "" when nothing is new or resolved)
    local: str  # out_dir/audit.json ("" when the audit did not run)


def pull_request_audit(ctx: FlowContext, *, api: ForgeApi, suite_config: SuiteConfig, baseline_path: str,
                       ref: str, ref_label: str) -> PullAudit:
    """Audit the PR's data with ``suite_config`` (the base's ``audit:`` and gate settings), read
    the base's audit at ``ref`` through the API, and render what the PR introduced."""
    from retrieval_gate.render.audit import render_audit_note, render_audit_section

    s = ctx.settings
    if s.suite_config.audit != suite_config.audit:
        ctx.runner.log("audit settings: this PR changes the suite's audit section; it is audited with the base's "
                       "(the change applies after merge)")
    report, local, _ = run_suite_audit(ctx, suite_config=suite_config)
    if report is None:
        return PullAudit(section=render_audit_note(f"the audit could not run ({local})."), local="")
    path = audit_repo_path(baseline_path)
    total = len(report.findings)
    mine = f"this PR's audit has {total} finding{'s' if total != 1 else ''} (the action's audit_file output)"
    try:
        remote = api.get_file(path=path, ref=ref)
    except ForgeError as exc:
        why = ctx.scrub(one_line(exc))
        ctx.runner.log(f"cannot read the base audit {path} at {ref_label}: {why}")
        return PullAudit(section=render_audit_note(f"the base audit {path} could not be read at {ref_label} "
                                                   f"({why}); {mine}."), local=local)
    if remote is None:
        ctx.runner.log(f"no base audit at {path} on {ref_label}: nothing to diff with")
        return PullAudit(section=render_audit_note(f"no base audit yet: it is written on the next baseline refresh "
                                                   f"({path}); {mine}."), local=local)
    try:
        base = parse_audit(remote.text.encode("utf-8"), source=Path(f"{path}@{ref[:12]}"))
    except RetrievalGateError as exc:
        why = ctx.scrub(one_line(exc))
        ctx.runner.annotate("warning", f"the base audit does not parse: {why}", title="retrieval-gate: audit")
        return PullAudit(section=render_audit_note(f"the base audit does not parse ({why}); it is rewritten on the "
                                                   f"next baseline refresh; {mine}."), local=local)
    new = introduced(current=report.findings, base=base.findings)
    gone = resolved(current=report.findings, base=base.findings)
    ctx.runner.log(f"audit against the base's ({path} at {ref_label}): {len(new)} new findings, {len(gone)} resolved")
    section = render_audit_section(introduced=new, resolved=len(gone), total=total)
    if section and base.params != report.params:
        section += "\n" + render_audit_note("the base audit was made with other settings than this PR's audit "
                                            "(the base's audit section changed since its last refresh); some "
                                            "findings may differ for that reason alone.")
    return PullAudit(section=section, local=local)
