"""The operations the action's flows need from the rest of the package, behind one small
interface, so that the flows (and their tests) do not depend on how eval, compare and render work.

``RealEngine`` wires the package's own functions, imported lazily (the eval stack pulls torch and
Chroma; ``report`` and ``comment`` runs, and the flow tests, do not need them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from retrieval_gate.compare.model import Baseline, Comparison
    from retrieval_gate.score.results import Results
    from retrieval_gate.settings import GateSettings, SuiteConfig


class Engine(Protocol):
    def evaluate(self, *, config: SuiteConfig, suite: str) -> Results:
        """Run the store-backed eval of the checkout."""
        ...

    def parse_baseline(self, *, text: str, source: str) -> Baseline:
        """Parse (and migrate) a baseline file's text; ``source`` names it in errors."""
        ...

    def dumps_baseline(self, *, baseline: Baseline) -> str:
        ...

    def update_baseline(self, *, baseline: Baseline | None, results: Results, sha: str | None,
                        ref: str | None, timestamp: str) -> Baseline:
        """The new baseline: ``results`` on top, ``baseline``'s history kept (bounded)."""
        ...

    def compare(self, *, results: Results, baseline: Baseline, gate: GateSettings) -> Comparison:
        ...

    def marker(self, *, suite: str) -> str:
        """The hidden line that identifies this suite's sticky comment."""
        ...

    def render_comment(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], max_chars: int) -> str:
        ...

    def render_summary(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str]) -> str:
        ...

    def render_html(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None) -> str:
        ...


class RealEngine:
    """The package's eval, baseline, compare and render functions."""

    def evaluate(self, *, config: SuiteConfig, suite: str) -> Results:
        from retrieval_gate.evaluate import run_eval

        return run_eval(config=config, suite=suite)

    def parse_baseline(self, *, text: str, source: str) -> Baseline:
        from retrieval_gate.compare.baseline_io import parse_baseline

        return parse_baseline(text, source=source)

    def dumps_baseline(self, *, baseline: Baseline) -> str:
        from retrieval_gate.compare.baseline_io import dumps_baseline

        return dumps_baseline(baseline)

    def update_baseline(self, *, baseline: Baseline | None, results: Results, sha: str | None,
                        ref: str | None, timestamp: str) -> Baseline:
        from retrieval_gate.compare.baseline_update import update_baseline

        return update_baseline(baseline=baseline, results=results, sha=sha, ref=ref, timestamp=timestamp)

    def compare(self, *, results: Results, baseline: Baseline, gate: GateSettings) -> Comparison:
        from retrieval_gate.compare.comparison import compare

        return compare(results=results, baseline=baseline, gate=gate)

    def marker(self, *, suite: str) -> str:
        from retrieval_gate.render.markdown import comment_marker

        return comment_marker(suite)

    def render_comment(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], max_chars: int) -> str:
        from retrieval_gate.render.markdown import render_comment

        return render_comment(results=results, comparison=comparison, baseline=baseline, links=links,
                              max_chars=max_chars)

    def render_summary(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str]) -> str:
        from retrieval_gate.render.markdown import render_summary

        return render_summary(results=results, comparison=comparison, baseline=baseline, links=links)

    def render_html(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None) -> str:
        from retrieval_gate.render.html import render_html

        return render_html(results=results, comparison=comparison, baseline=baseline)


def real_engine() -> Engine:
    """The engine the ``action`` command uses (tests replace this factory with a fake engine)."""
    return RealEngine()
