"""The files a run writes under ``out_dir`` and the job summary (with GitHub's size limit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval_gate.artifacts.results import comparison_text, results_text
from retrieval_gate.publish.action_settings import ActionSettings
from retrieval_gate.publish.flow_context import FlowContext

if TYPE_CHECKING:
    from retrieval_gate.baseline.model import Baseline
    from retrieval_gate.compare.model import Comparison
    from retrieval_gate.score.results import Results


def write_reports(ctx: FlowContext, *, results: Results, comparison: Comparison | None,
                   baseline: Baseline | None) -> dict[str, str]:
    """results.json, comparison.json (when compared), report.html and junit.xml (any CI's test
    widget: ``render.junit``) under out_dir; their paths."""
    out = ctx.settings.out_dir
    paths = {"results_path": (out / "results.json").as_posix(), "comparison_path": "",
             "html_path": (out / "report.html").as_posix(), "junit_path": (out / "junit.xml").as_posix()}
    ctx.write_text(out / "results.json", results_text(results))
    if comparison is not None:
        ctx.write_text(out / "comparison.json", comparison_text(comparison))
        paths["comparison_path"] = (out / "comparison.json").as_posix()
    html = ctx.engine.render_html(results=results, comparison=comparison, baseline=baseline)
    ctx.write_text(out / "report.html", html)
    ctx.write_text(out / "junit.xml", ctx.engine.render_junit(results=results, comparison=comparison))
    return paths


def write_summary(ctx: FlowContext, markdown: str, *, shorter: str | None = None) -> None:
    """The job summary, in full. Over GitHub's 1 MiB limit, the full text goes to
    ``out_dir/summary.md``; the summary then holds ``shorter`` (the size-bounded comment, when
    there is one) and says where the full text is."""
    if ctx.runner.append_summary(markdown):
        return
    full = ctx.settings.out_dir / "summary.md"
    ctx.write_text(full, markdown)
    pointer = (f"The full summary is over GitHub's 1 MiB limit; it is in `{full.as_posix()}` "
               "(upload it as an artifact).\n")
    if shorter is None or not ctx.runner.append_summary(f"> {pointer}\n{shorter}"):
        ctx.runner.append_summary(pointer)
    ctx.runner.annotate("warning", f"job summary over 1 MiB: written to {full.as_posix()} instead")


def links_for(s: ActionSettings, *, baseline_ref: str | None, baseline_path: str | None = None) -> dict[str, str]:
    links: dict[str, str] = {}
    if s.run_url:
        links["run"] = s.run_url
    if baseline_ref and s.repository:
        path = baseline_path or s.baseline_path
        blob = "-/blob" if s.forge == "gitlab" else "blob"
        links["baseline"] = f"{s.server_url.rstrip('/')}/{s.repository}/{blob}/{baseline_ref}/{path}"
    return links


def fallback_section(*, body: str, pr_number: int | None, comment_file: str) -> str:
    """Appended to the job summary when the comment could not be posted."""
    return (f"\n\n---\n\n**The PR comment could not be posted** to #{pr_number} (read-only token, e.g. a pull "
            f"request from a fork). It is in `{comment_file}` (output `comment_file`); the "
            "`workflow_run` pattern in docs/action.md posts it.\n\n<details><summary>Comment text</summary>\n\n"
            f"{body}\n</details>\n")
