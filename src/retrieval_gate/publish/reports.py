"""The files a run writes under ``out_dir``, the job summary (within the forge's size limit), the
report's links (the forge's URLs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval_gate.artifacts.label_sidecar import report_queue
from retrieval_gate.artifacts.run_files import comparison_text, results_text
from retrieval_gate.forge.base import Words
from retrieval_gate.publish.flow_context import FlowContext
from retrieval_gate.render.html import render_html
from retrieval_gate.render.junit import render_junit

if TYPE_CHECKING:
    from retrieval_gate.baseline.model import Baseline
    from retrieval_gate.compare.model import Comparison
    from retrieval_gate.score.results import Results


def write_reports(ctx: FlowContext, *, results: Results, comparison: Comparison | None,
                  baseline: Baseline | None, junit_comparison: Comparison | None = None,
                  top_up: dict[str, object] | None = None) -> dict[str, str]:
    """results.json, comparison.json (when compared), report.html and junit.xml (any CI's test
    widget: ``render.junit``; against ``junit_comparison`` when given: a refresh's, against the
    baseline it accepted) under out_dir; their paths."""
    out = ctx.settings.out_dir
    paths = {"results_path": (out / "results.json").as_posix(), "comparison_path": "",
             "html_path": (out / "report.html").as_posix(), "junit_path": (out / "junit.xml").as_posix()}
    ctx.write_text(out / "results.json", results_text(results))
    if comparison is not None:
        ctx.write_text(out / "comparison.json", comparison_text(comparison))
        paths["comparison_path"] = (out / "comparison.json").as_posix()
    html = render_html(results=results, comparison=comparison, baseline=baseline,
                       queue=report_queue(results=results, comparison=comparison), top_up=top_up)
    ctx.write_text(out / "report.html", html)
    junit = junit_comparison if junit_comparison is not None else comparison
    ctx.write_text(out / "junit.xml", render_junit(results=results, comparison=junit,
                                                  config_file=ctx.settings.config_repo_path))
    return paths


TOP_UP_FOLDER = "top-up"


def write_top_up(ctx: FlowContext, *, results: Results, comparison: Comparison | None = None,
                 baseline: Baseline | None = None) -> dict[str, object] | None:
    """The PR run's ``label top-up`` (docs/golden-set.md "Top up"): on a ``needs-labels``
    comparison, the cards whose labels decide its verdict, heaviest first (``compare.decisive``);
    else the cards of its top k that no judgement covers; written as a draft folder
    ``out_dir/top-up/`` beside the reports (uploaded with them); what the report and the comment
    link to (``top_up``: cards, cases, the page's path, the run's URL). None on a golden set judged
    ``complete`` (nothing is unjudged), and when the run's KB or golden set is not at hand (or is a
    bare qrels file) — nothing to top up from."""
    from pathlib import Path

    from retrieval_gate.compare.judgements import judgements_of
    from retrieval_gate.errors import ProblemsError, UsageError, one_line
    from retrieval_gate.golden.topup_run import TopUpOptions, top_up, top_up_texts

    mode = comparison.judgements if comparison is not None and comparison.judgements else judgements_of(results)
    if mode == "complete":
        return None
    kb, cases = results.inputs.get("kb"), results.inputs.get("cases")
    if kb is None or cases is None or not Path(kb.path).exists() or not Path(cases.path).exists():
        return None
    decisive = None
    if comparison is not None and comparison.verdict == "needs-labels" and baseline is not None:
        from retrieval_gate.compare.comparison import decision_of
        from retrieval_gate.compare.gate import GateSettings

        gate = GateSettings(**comparison.gate.model_dump(exclude={"status"}))  # the knobs, not the outcome
        decision = decision_of(results=results, baseline=baseline, gate=gate, rescore=True)
        decisive = [(c.case, c.card) for c in decision.cards[:decision.sitting]] if decision is not None else None
    try:
        found = top_up(kb=Path(kb.path), cases=Path(cases.path),
                       options=TopUpOptions(loaded=[("results.json", results)], depth=results.headline_k,
                                            decisive=decisive))
    except (UsageError, ProblemsError) as exc:  # a top-up never stops the PR run: it says why and goes on
        ctx.runner.log(f"label top-up: skipped ({one_line(exc)})")
        return None
    folder = ctx.settings.out_dir / TOP_UP_FOLDER
    if found.cards:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in top_up_texts(folder, result=found).items():
            ctx.write_text(folder / name, text)
    return {"cards": found.cards, "cases": len(found.entries), "k": results.headline_k,
            "path": (folder / "label.html").as_posix(), "draft": (folder / "draft.jsonl").as_posix(),
            "url": ctx.settings.run_url or ""}


def write_summary(ctx: FlowContext, markdown: str, *, shorter: str | None = None) -> None:
    """The job summary, in full. Over the forge's limit (GitHub: 1 MiB), the full text goes to
    ``out_dir/summary.md``; the summary then holds ``shorter`` (the size-bounded comment, when
    there is one) and says where the full text is."""
    if ctx.runner.append_summary(markdown):
        return
    full = ctx.settings.out_dir / "summary.md"
    ctx.write_text(full, markdown)
    limit = ctx.forge.limits.summary_bytes or 0
    pointer = (f"The full summary is over {ctx.forge.title}'s {limit / 1024 / 1024:g} MiB limit; it is in "
               f"`{full.as_posix()}` "
               "(upload it as an artifact).\n")
    if shorter is None or not ctx.runner.append_summary(f"> {pointer}\n{shorter}"):
        ctx.runner.append_summary(pointer)
    ctx.runner.annotate("warning", f"job summary over its size limit: written to {full.as_posix()} instead")


def links_for(ctx: FlowContext, *, baseline_ref: str | None, baseline_path: str | None = None) -> dict[str, str]:
    s = ctx.settings
    links: dict[str, str] = {}
    if s.run_url:
        links[ctx.forge.words.run_link] = s.run_url  # its label, in the forge's words
    if baseline_ref and s.repository:
        links["baseline"] = ctx.forge.blob_url(s.place, ref=baseline_ref, path=baseline_path or s.baseline_path)
    if s.inputs.history_url:  # the suite's page of the published history site (docs/history.md)
        links["history"] = f"{s.inputs.history_url.rstrip('/')}/{s.inputs.suite}.html"
    return links


def fallback_section(*, body: str, words: Words, pr_number: int | None, comment_file: str) -> str:
    """Appended to the job summary when the comment could not be posted."""
    instead = words.no_comment.format(file=f"`{comment_file}`")
    return (f"\n\n---\n\n**The {words.comment} could not be posted** on {words.change} {words.ref(pr_number)}: "
            f"{instead}.\n\n<details><summary>{words.comment.capitalize()} text</summary>\n\n"
            f"{body}\n</details>\n")
