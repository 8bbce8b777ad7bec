"""``retrieval-gate audit``: golden-set hygiene (findings, coverage, label review, provenance).

The shell: loads the KB and the cases (the same checks as ``validate``), chunks the KB to count
chunks per card, reads an optional results file and a base audit, calls the pure core
(``retrieval_gate.audit``) and writes the outputs atomically."""

from __future__ import annotations

from pathlib import Path

import typer

from retrieval_gate.cli.app import app, console
from retrieval_gate.errors import UsageError
from retrieval_gate.files import write_text_atomic


@app.command("audit")
def audit_command(
    kb: Path | None = typer.Option(None, "--kb", help="Knowledge base (default: the suite's)."),
    cases: Path | None = typer.Option(None, "--cases", help="Golden set (default: the suite's)."),
    results: Path | None = typer.Option(None, "--results", help="A results file of these cases: turns on the label review and gives coverage cells their hit rates."),
    base: Path | None = typer.Option(None, "--base", help="The base branch's audit.json: list only the findings this audit introduced."),
    out: Path = typer.Option(..., "--out", help="Where to write audit.json."),
    html: Path | None = typer.Option(None, "--html", help="Also write a self-contained HTML page (coverage matrix, findings)."),
    markdown: Path | None = typer.Option(None, "--markdown", help="With --base: write the PR comment's collapsed section of introduced findings."),
    coverage: str | None = typer.Option(None, "--coverage", help="Coverage fields, comma-separated (kind, locale, form, hard_class, split, tag.KEY, gold.KEY)."),
    threshold: float | None = typer.Option(None, "--threshold", help="Near-duplicate Jaccard threshold (default 0.8)."),
    num_perm: int | None = typer.Option(None, "--num-perm", help="MinHash permutations (default 128)."),
    shingle_size: int | None = typer.Option(None, "--shingle-size", help="Words per shingle (default 3)."),
    config: Path | None = typer.Option(None, "--config", help="Config file (default ./retrieval-gate.yml when present)."),
    suite: str = typer.Option("default", "--suite", help="Suite of the config file."),
) -> None:
    """Golden-set hygiene: near-duplicate cards and ambiguous gold, query leakage, duplicate
    queries and split leaks, unwinnable cases, a coverage matrix, unjudged top-k cards. Exit 0
    whatever it finds (report first); 2 on bad input."""
    from retrieval_gate.artifacts.run_files import read_audit, write_audit
    from retrieval_gate.audit import introduced, resolved
    from retrieval_gate.evaluation.audit_suite import audit_suite
    from retrieval_gate.load.textfile import display
    from retrieval_gate.overrides import AuditOverrides, SuiteOverrides
    from retrieval_gate.render.audit import print_audit, render_audit_html, render_audit_section
    from retrieval_gate.settings import SuiteConfig, load_config, resolve_suite

    if markdown is not None and base is None:
        raise UsageError("--markdown needs --base (the section lists the findings introduced since the base)")
    overrides = SuiteOverrides(kb=str(kb) if kb else None, cases=str(cases) if cases else None,
                               audit=AuditOverrides(coverage=coverage, threshold=threshold, num_perm=num_perm,
                                                    shingle_size=shingle_size))
    config_file, config_path = load_config(config, required=config is not None)
    settings: SuiteConfig = resolve_suite(config_file, suite=suite, overrides=overrides, config_path=config_path)
    if settings.kb is None or settings.cases is None:
        raise UsageError("audit needs --kb and --cases (or a suite that names them)")
    loaded = None
    if results is not None:
        from retrieval_gate.artifacts.run_files import read_results

        loaded = read_results(results)
    base_report = read_audit(base) if base is not None else None  # bad input fails before any output
    report = audit_suite(suite_config=settings, results=loaded,
                         results_source=display(Path(results)) if results is not None else "results")
    write_audit(out, report=report)
    print_audit(report, console=console)
    from retrieval_gate.evaluation.audit_suite import suite_truncation
    from retrieval_gate.evaluation.chunks import truncation_line

    cut = truncation_line(suite_truncation(suite_config=settings))
    if cut is not None:
        console.print(f"chunks: {cut}", markup=False, highlight=False, soft_wrap=True)
    if html is not None:
        write_text_atomic(html, text=render_audit_html(report))
        console.print(f"wrote {html}", markup=False, soft_wrap=True)
    if base_report is not None:
        new = introduced(current=report.findings, base=base_report.findings)
        gone = resolved(current=report.findings, base=base_report.findings)
        console.print(f"since the base audit: {len(new)} new findings, {len(gone)} resolved",
                      markup=False, highlight=False)
        for f in new:
            console.print(f"  new {f.severity} {f.kind}: {f.reason}", markup=False, highlight=False, soft_wrap=True)
        if markdown is not None:
            write_text_atomic(markdown, text=render_audit_section(introduced=new, resolved=len(gone),
                                                             total=len(report.findings)))
            console.print(f"wrote {markdown}", markup=False, soft_wrap=True)
    console.print(f"wrote {out}", markup=False, soft_wrap=True)
