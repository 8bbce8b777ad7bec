"""``retrieval-gate report``: results (+ baseline / comparison) → PR comment Markdown, HTML report,
terminal tables or JUnit XML."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.cli.paths import refuse_output_onto_inputs
from retrieval_gate.errors import UsageError
from retrieval_gate.files import write_text_atomic
from retrieval_gate.render.escape import escape_terminal
from retrieval_gate.render.limits import DEFAULT_COMMENT_CHARS

if TYPE_CHECKING:
    from rich.console import Console

    from retrieval_gate.baseline.model import Baseline
    from retrieval_gate.compare.model import Comparison
    from retrieval_gate.score.results import Results

FORMATS = ("markdown", "html", "terminal", "junit")


def parse_links(items: list[str]) -> dict[str, str]:
    """``["run=https://…", …]`` → ``{"run": "https://…"}``; only http(s) URLs."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, url = item.partition("=")
        if not sep or not key.strip() or not url.strip().lower().startswith(("http://", "https://")):
            raise UsageError(f"--link {item!r}: expected NAME=URL with an http(s) URL (e.g. run=https://…)")
        out[key.strip()] = url.strip()
    return out


def read_report_inputs(*, results: Path, baseline: Path | None, comparison: Path | None, config: Path | None,
                       suite: str | None) -> tuple[Results, Baseline | None, Comparison | None]:
    """Read the files; with a baseline and no comparison, compare now with the suite's gate
    settings from the config file (as ``compare`` would, without its flags)."""
    from retrieval_gate.artifacts.baseline import read_baseline, read_kb_manifest
    from retrieval_gate.artifacts.run_files import read_comparison, read_results
    from retrieval_gate.settings import default_baseline_path, suite_for_results

    loaded = read_results(results)
    if baseline is None and comparison is None:  # the default baseline, found exactly as compare finds it
        configured = suite_for_results(config=config, suite=suite, results_suite=loaded.suite).baseline
        found = default_baseline_path(configured=configured, suite=suite, results_suite=loaded.suite)
        baseline = found if found.is_file() else None
    base = read_baseline(baseline) if baseline is not None else None
    comp = read_comparison(comparison) if comparison is not None else None
    if comp is None and base is not None:
        from retrieval_gate.compare.comparison import compare  # numpy: only when comparing here

        suite_config = suite_for_results(config=config, suite=suite, results_suite=loaded.suite)
        comp = compare(results=loaded, baseline=base, gate=suite_config.gate, kb_before=read_kb_manifest(baseline),
                       judgements=suite_config.judgements)
    return loaded, base, comp


def terminal_text(*, results: Results, comparison: Comparison | None, target: Console) -> None:
    from retrieval_gate.render import terminal

    terminal.print_results(results, console=target)
    printer = getattr(terminal, "print_comparison", None)
    if comparison is not None and printer is not None:
        printer(comparison, target)


@app.command("report")
def report_command(
    results: Path = typer.Option(..., "--results", help="Results JSON written by score or eval."),
    baseline: Path | None = typer.Option(None, "--baseline", help="Baseline JSON: adds the trend and, without --comparison, a comparison (with the suite's gate settings from the config file). Default: found as compare finds it (the suite's 'baseline' in the config file, else baselines/<suite>.json) when it exists."),
    comparison: Path | None = typer.Option(None, "--comparison", help="Comparison JSON written by `compare --out`."),
    fmt: str = typer.Option("markdown", "--format", help="markdown (the PR comment), html (self-contained report), terminal, or junit (JUnit XML for any CI's test widget)."),
    template: Path | None = typer.Option(None, "--template", help="Custom Jinja template for markdown; may {% extends \"comment.md.j2\" %} and must keep {{ marker }}."),
    out: Path | None = typer.Option(None, "--out", help="Write here instead of standard output."),
    link: list[str] = typer.Option([], "--link", help="NAME=URL shown in the comment (run, artifact, summary, report or any name). Repeatable."),
    max_chars: int = typer.Option(DEFAULT_COMMENT_CHARS, "--max-chars", min=0, help="Markdown size limit (GitHub refuses comments over 65,536); 0 = no limit (job summary)."),
    config: Path | None = typer.Option(None, "--config", help="Config file whose gate settings judge a --baseline comparison (default ./retrieval-gate.yml when present)."),
    suite: str | None = typer.Option(None, "--suite", help="Suite of the config file (default: the results' suite)."),
    audit: Path | None = typer.Option(None, "--audit", help="This run's audit.json: markdown (with --audit-base) gets a collapsed section of the findings it introduced; html gets the coverage matrix."),
    audit_base: Path | None = typer.Option(None, "--audit-base", help="The base branch's audit.json (see --audit)."),
    kb: Path | None = typer.Option(None, "--kb", help="html: the KB the run read, for the cards to label (default: the results' KB path, when it is there)."),
    junit_schema: str = typer.Option("default", "--junit-schema", help="junit: default (every widget: GitLab, GitHub actions, Azure, CircleCI), or jenkins (what Jenkins' xunit plugin's XSD accepts: no file/line on a testcase, no skipped on testsuites)."),
) -> None:
    """Render results (and a comparison with the baseline) as the PR comment, an HTML report or
    terminal tables. Exit 0; 2 on bad input (including a custom template without the marker)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if template is not None and fmt != "markdown":
        raise UsageError("--template applies to --format markdown only")
    links = parse_links(link)
    refuse_output_onto_inputs(outputs={"--out": out}, inputs={"--results": results, "--baseline": baseline,
                                                                "--comparison": comparison, "--template": template,
                                                                "--config": config})
    loaded, base, comp = read_report_inputs(results=results, baseline=baseline, comparison=comparison, config=config,
                                            suite=suite)
    if audit_base is not None and audit is None:
        raise UsageError("--audit-base needs --audit")
    if fmt == "markdown" and audit is not None and audit_base is None:
        raise UsageError("--audit needs --audit-base with --format markdown (the comment lists what the PR introduced)")
    if fmt in ("terminal", "junit") and audit is not None:
        raise UsageError("--audit applies to --format markdown and html")
    if fmt == "junit":
        from retrieval_gate.render.junit import SCHEMAS

        if junit_schema not in SCHEMAS:
            raise UsageError(f"--junit-schema {junit_schema!r}: expected one of {', '.join(SCHEMAS)}")
    elif junit_schema != "default":
        raise UsageError("--junit-schema applies to --format junit only")
    if fmt == "markdown":
        from retrieval_gate.render.markdown import render_comment, render_summary

        section = _audit_section(audit, audit_base) if audit is not None and audit_base is not None else ""
        if max_chars == 0:
            text = render_summary(results=loaded, comparison=comp, baseline=base, links=links, template=template,
                                  audit_section=section)
        else:
            text = render_comment(results=loaded, comparison=comp, baseline=base, links=links, template=template,
                                  max_chars=max_chars, audit_section=section)
    elif fmt == "html":
        from retrieval_gate.artifacts.label_sidecar import report_queue
        from retrieval_gate.artifacts.run_files import read_audit
        from retrieval_gate.render.html import render_html

        text = render_html(results=loaded, comparison=comp, baseline=base,
                           audit=read_audit(audit) if audit is not None else None,
                           queue=report_queue(results=loaded, comparison=comp, kb=kb))
    elif fmt == "junit":
        from retrieval_gate.render.junit import render_junit
        from retrieval_gate.settings import DEFAULT_CONFIG_NAME

        # the gate testcase's file: the config file that sets the gate, as given (relative to the repository)
        config_file = config if config is not None else Path(DEFAULT_CONFIG_NAME)
        text = render_junit(results=loaded, comparison=comp, schema=junit_schema,
                            config_file=config_file.as_posix() if config_file.is_file() else None)
    else:
        if out is None:
            terminal_text(results=loaded, comparison=comp, target=console)
            return
        from retrieval_gate.render.console import SafeConsole

        buffer = io.StringIO()
        terminal_text(results=loaded, comparison=comp,
                      target=SafeConsole(file=buffer, width=120, no_color=True, highlight=False))
        text = buffer.getvalue()
    if out is None:
        sys.stdout.write(escape_terminal(text, keep_newlines=True))  # a CI log: no line of PR text starts a command
        sys.stdout.flush()
    else:
        write_text_atomic(out, text=text)
        console.print(f"wrote {out}", markup=False, highlight=False, soft_wrap=True)


def _audit_section(audit: Path, audit_base: Path) -> str:
    """The PR comment's audit section: findings of ``audit`` not in ``audit_base``."""
    from retrieval_gate.artifacts.run_files import read_audit
    from retrieval_gate.audit import introduced, resolved
    from retrieval_gate.render.audit import render_audit_section

    current, base_report = read_audit(audit), read_audit(audit_base)
    return render_audit_section(introduced=introduced(current=current.findings, base=base_report.findings),
                                resolved=len(resolved(current=current.findings, base=base_report.findings)),
                                total=len(current.findings))
