"""The operations the action's flows need from the rest of the package, behind one small
interface, so that the flows (and their tests) do not depend on how eval, compare and render work.

``RealEngine`` wires the package's own functions, imported lazily (the eval stack pulls torch and
Chroma; ``report`` and ``comment`` runs, and the flow tests, do not need them).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from retrieval_gate.artifacts.baseline import baseline_from_text, baseline_text
from retrieval_gate.artifacts.labels import report_queue
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.clock import now_iso
from retrieval_gate.compare.gate_slices import check_gate_slices
from retrieval_gate.evaluation.audit_suite import audit_suite
from retrieval_gate.render.escape import shown
from retrieval_gate.render.junit import render_junit
from retrieval_gate.store.folder import LOCK_STAGE

if TYPE_CHECKING:
    from retrieval_gate.audit import AuditReport
    from retrieval_gate.baseline.model import Baseline
    from retrieval_gate.compare.gate import GateSettings
    from retrieval_gate.compare.model import Comparison
    from retrieval_gate.score.kb_manifest import KbCard
    from retrieval_gate.score.results import Results
    from retrieval_gate.settings import SuiteConfig


class Engine(Protocol):
    def evaluate(self, *, suite_config: SuiteConfig, suite: str) -> Results:
        """Run the store-backed eval of the checkout."""
        ...

    def parse_baseline(self, *, text: str, source: str) -> Baseline:
        """A baseline file's text through the input limits, parsed (and migrated); ``source``
        names it in errors (``artifacts.baseline.baseline_from_text``)."""
        ...

    def dumps_baseline(self, *, baseline: Baseline) -> str:
        ...

    def update_baseline(self, *, baseline: Baseline | None, results: Results, sha: str | None,
                        ref: str | None, timestamp: str) -> Baseline:
        """The new baseline: ``results`` on top, ``baseline``'s history kept (bounded)."""
        ...

    def compare(self, *, results: Results, baseline: Baseline, gate: GateSettings,
                kb_before: Mapping[str, KbCard] | None = None) -> Comparison:
        """``kb_before``: the baseline's KB manifest (``<suite>.kb.json``), when the base has one."""
        ...

    def audit(self, *, suite_config: SuiteConfig) -> AuditReport:
        """The golden-set audit of the checkout's KB and cases with ``suite_config``'s ``audit:``
        and gate settings (no model, no store)."""
        ...

    def marker(self, *, suite: str) -> str:
        """The hidden line that identifies this suite's sticky comment."""
        ...

    def render_comment(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], max_chars: int, audit_section: str = "") -> str:
        """``audit_section``: the golden-set audit's Markdown (``render.audit``), placed before the footer."""
        ...

    def render_summary(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], audit_section: str = "") -> str:
        ...

    def render_html(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None) -> str:
        ...

    def render_junit(self, *, results: Results, comparison: Comparison | None, config_file: str | None = None) -> str:
        """JUnit XML: a lost hit is a failure (``render.junit``); ``config_file``: the gate testcase's ``file``."""
        ...


class LogProgress:
    """Eval progress as plain log lines (Actions logs are not a terminal): each stage at every
    tenth of the way and when done, and the eval's notes."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        self._shown: dict[str, int] = {}

    def step(self, stage: str, done: int, total: int) -> None:
        if stage == LOCK_STAGE:  # the store lock's own notes (every 30 s) tell the wait in a log
            return
        tenth = max(1, total // 10)
        if done <= 0 or (done < total and done // tenth == self._shown.get(stage, -1)):
            return
        self._shown[stage] = done // tenth
        self.write(f"{stage}: {done}/{total}")

    def note(self, message: str) -> None:
        self.write(f"note: {message}")


class RealEngine:
    """The package's eval, baseline, compare and render functions."""

    def __init__(self, *, log: Callable[[str], None] | None = None) -> None:
        self.log = log or (lambda line: print(shown(line), file=sys.stderr, flush=True))

    def evaluate(self, *, suite_config: SuiteConfig, suite: str) -> Results:
        from retrieval_gate.evaluation.run import run_eval

        return run_eval(suite_config=suite_config, suite=suite, progress=LogProgress(self.log), created_at=now_iso())

    def parse_baseline(self, *, text: str, source: str) -> Baseline:
        return baseline_from_text(text, source=source)

    def dumps_baseline(self, *, baseline: Baseline) -> str:
        return baseline_text(baseline)

    def update_baseline(self, *, baseline: Baseline | None, results: Results, sha: str | None,
                        ref: str | None, timestamp: str) -> Baseline:
        return update_baseline(baseline=baseline, results=results, sha=sha, ref=ref, timestamp=timestamp)

    def compare(self, *, results: Results, baseline: Baseline, gate: GateSettings,
                kb_before: Mapping[str, KbCard] | None = None) -> Comparison:
        from retrieval_gate.compare.comparison import compare

        check_gate_slices(gate=gate, slices=[*results.aggregates, *baseline.aggregates])  # a typo'd slice: exit 2
        return compare(results=results, baseline=baseline, gate=gate, kb_before=kb_before)

    def marker(self, *, suite: str) -> str:
        from retrieval_gate.render.markdown import comment_marker

        return comment_marker(suite)

    def audit(self, *, suite_config: SuiteConfig) -> AuditReport:
        return audit_suite(suite_config=suite_config)

    def render_comment(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], max_chars: int, audit_section: str = "") -> str:
        from retrieval_gate.render.markdown import render_comment

        return render_comment(results=results, comparison=comparison, baseline=baseline, links=links,
                              max_chars=max_chars, audit_section=audit_section)

    def render_summary(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], audit_section: str = "") -> str:
        from retrieval_gate.render.markdown import render_summary

        return render_summary(results=results, comparison=comparison, baseline=baseline, links=links,
                              audit_section=audit_section)

    def render_html(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None) -> str:
        from retrieval_gate.render.html import render_html

        return render_html(results=results, comparison=comparison, baseline=baseline,
                           queue=report_queue(results=results, comparison=comparison))

    def render_junit(self, *, results: Results, comparison: Comparison | None, config_file: str | None = None) -> str:
        return render_junit(results=results, comparison=comparison, config_file=config_file)


def real_engine() -> Engine:
    """The engine the ``action`` command uses (tests replace this factory with a fake engine)."""
    return RealEngine()
