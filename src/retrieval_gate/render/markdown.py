"""The PR comment and the job summary: Markdown rendered from ``templates/comment.md.j2`` (or a
user template extending it) in a sandboxed Jinja environment.

Every ``{{ … }}`` is escaped with ``escape.md_text`` unless the value is marked safe (the number
filters return safe text), so user data cannot break tables, inject HTML or ping people.

Size: each forge has a limit (GitHub refuses comments over 65,536 characters: ``forge/*``).
``render_comment`` renders with everything, and while the text is longer than ``max_chars`` re-
renders with fewer per-case entries (lost / gained hits, added / removed / failed ids: 100, 50, 20,
10, 0 each), then fewer slice rows (40, 20, 10, 0; the regressed and most-changed are kept), saying
what was cut and where the full report is. If even that is too long (a custom template, a huge
config diff) it cuts at a line end and appends a notice; the marker is kept. """

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import (
    ChoiceLoader,
    FileSystemLoader,
    PackageLoader,
    StrictUndefined,
    Template,
    TemplateError,
    TemplateNotFound,
    TemplateSyntaxError,
)
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.compare.model import Comparison
from retrieval_gate.errors import InputError, Problem
from retrieval_gate.render import fmt
from retrieval_gate.render.context import LINK_LABELS, Limits, build_context
from retrieval_gate.render.escape import chart_label, marker_suite, md_text
from retrieval_gate.render.limits import DEFAULT_COMMENT_CHARS, cut_to_fit
from retrieval_gate.score.results import Results

__all__ = ["comment_marker", "render_comment", "render_summary"]

COMMENT_TEMPLATE = "comment.md.j2"
CASE_STEPS = (None, 100, 50, 20, 10, 0)
SLICE_STEPS = (40, 20, 10, 0)
SUMMARY_CASE_STEPS = (None, 5000, 2000, 1000, 500)


def comment_marker(suite: str) -> str:
    """The hidden line that identifies this suite's sticky comment: ``<!-- retrieval-gate:<suite> -->``."""
    return f"<!-- retrieval-gate:{marker_suite(suite)} -->"


def _finalize(value: Any) -> Any:
    """Markdown autoescape: everything printed that is not already safe goes through md_text."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return str(value)
    return md_text(value)


def _md_filter(value: Any, max_len: int | None = None) -> Markup:
    return md_text(value, max_len=max_len)


def _url_filter(value: Any) -> Markup:
    return fmt.safe_url(str(value)) or Markup("")


def markdown_environment(extra_dir: Path | None = None) -> ImmutableSandboxedEnvironment:
    """The sandboxed environment: package templates first (so ``{% extends "comment.md.j2" %}``
    always means ours), then the custom template's folder for its own includes."""
    loaders: list[Any] = [PackageLoader("retrieval_gate.render", "templates")]
    if extra_dir is not None:
        loaders.append(FileSystemLoader(str(extra_dir)))
    env = ImmutableSandboxedEnvironment(
        loader=ChoiceLoader(loaders),
        autoescape=False,
        finalize=_finalize,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        md=_md_filter, num=fmt.num, signed=fmt.signed, delta=fmt.delta, ci=fmt.ci, n=fmt.n_label, mde=fmt.mde_text,
        count=fmt.count, change=fmt.change, sparkline=fmt.sparkline, url=_url_filter,
        chart_label=chart_label, clamp01=fmt.clamp01,
    )
    env.globals.update(status_emoji=fmt.STATUS_EMOJI, status_words=fmt.STATUS_WORDS)
    return env


def _load_template(template: Path | None) -> tuple[Template, str]:
    if template is None:
        return markdown_environment().get_template(COMMENT_TEMPLATE), COMMENT_TEMPLATE
    path = Path(template)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), None, f"cannot read template: {exc}")) from None
    env = markdown_environment(extra_dir=path.parent)
    try:
        return env.from_string(source), str(path)
    except TemplateSyntaxError as exc:
        raise InputError(Problem(str(path), exc.lineno, f"template syntax error: {exc.message}")) from None


def _render(template: Template, where: str, context: Mapping[str, Any]) -> str:
    try:
        return template.render(**context)
    except TemplateSyntaxError as exc:
        raise InputError(Problem(exc.filename or where, exc.lineno, f"template syntax error: {exc.message}")) from None
    except TemplateNotFound as exc:
        raise InputError(Problem(where, None, f"template not found: {exc.name}")) from None
    except TemplateError as exc:
        raise InputError(Problem(where, _template_line(exc), f"template error: {exc}")) from None
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        # The template's own mistake (a loop past the sandbox's range cap, 1/0, a bad call): a
        # usage error naming the template and its line, not a crash.
        message = str(exc).splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise InputError(Problem(where, _template_line(exc),
                                 f"template error: {type(exc).__name__}: {message}")) from None


def _template_line(exc: BaseException) -> int | None:
    """The template line Jinja records in the traceback (its frames carry template lines)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name == "<template>" or name.endswith(".j2"):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _check_marker(text: str, marker: str, where: str) -> None:
    if marker not in text:
        raise InputError(Problem(where, None, f"the rendered comment lacks the marker {marker!r}: keep "
                                 "{{ marker }} in the template (or extend comment.md.j2), it is how "
                                 "the sticky comment is found"))


def _context(results: Results, comparison: Comparison | None, baseline: Baseline | None,
             links: Mapping[str, str] | None, limits: Limits, summary: bool,
             max_chars: int | None = None, audit_section: str = "",
             top_up: Mapping[str, Any] | None = None) -> dict[str, Any]:
    clean_links = {key: str(url) for key, url in (links or {}).items() if fmt.safe_url(str(url))}
    context = build_context(results=results, comparison=comparison, baseline=baseline, links=clean_links,
                            limits=limits, marker=Markup(comment_marker(results.suite)), top_up=top_up)
    context["summary"] = summary
    context["limit"] = max_chars
    context["audit_section"] = Markup(audit_section)  # rendered by render/audit.py
    return context


def render_summary(
    *,
    results: Results,
    comparison: Comparison | None = None,
    baseline: Baseline | None = None,
    links: dict[str, str] | None = None,
    template: Path | None = None,
    max_bytes: int | None = None,
    audit_section: str = "",
    top_up: Mapping[str, Any] | None = None,
) -> str:
    """The job summary: the comment's template with nothing cut. ``max_bytes`` (UTF-8), when
    given, applies the same trimming as the comment (GitHub rejects a step summary over
    1 MiB, ``forge.github``)."""
    tpl, where = _load_template(template)
    marker = comment_marker(results.suite)
    steps = [Limits()] if max_bytes is None else [Limits(cases=c) for c in SUMMARY_CASE_STEPS] + _steps()[1:]
    text = ""
    for limits in steps:
        context = _context(results, comparison, baseline, links, limits, summary=True, max_chars=max_bytes,
                           audit_section=audit_section, top_up=top_up)
        text = _render(tpl, where, context)
        _check_marker(text, marker, where)
        if max_bytes is None or len(text.encode("utf-8")) <= max_bytes:
            return text
    return cut_to_fit(text, max_chars=max_bytes // 4, marker=marker, where=_where_full_report(links))


def render_comment(
    *,
    results: Results,
    comparison: Comparison | None = None,
    baseline: Baseline | None = None,
    links: dict[str, str] | None = None,
    template: Path | None = None,
    max_chars: int = DEFAULT_COMMENT_CHARS,
    audit_section: str = "",
    top_up: Mapping[str, Any] | None = None,
) -> str:
    """The sticky PR comment, at most ``max_chars`` characters (see the module docstring)."""
    tpl, where = _load_template(template)
    text = ""
    marker = comment_marker(results.suite)
    for limits in _steps():
        context = _context(results, comparison, baseline, links, limits, summary=False, max_chars=max_chars,
                           audit_section=audit_section, top_up=top_up)
        text = _render(tpl, where, context)
        _check_marker(text, marker, where)
        if len(text) <= max_chars:
            return text
    return cut_to_fit(text, max_chars=max_chars, marker=marker, where=_where_full_report(links))


def _steps() -> list[Limits]:
    return [Limits(cases=c) for c in CASE_STEPS] + [Limits(cases=0, slices=s) for s in SLICE_STEPS]


def _where_full_report(links: Mapping[str, str] | None) -> str:
    found = [(LINK_LABELS.get(key, key), fmt.safe_url(str(url))) for key, url in (links or {}).items()]
    parts = [f"[{md_text(label)}]({url})" for label, url in found if url]
    if parts:
        return "full report: " + " · ".join(parts) + "."
    return "the full report is in the job summary and the HTML report (`retrieval-gate report --format html`)."
