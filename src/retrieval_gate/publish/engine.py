"""The two operations of the action's flows that need a model, a store or the checkout's data —
the eval and the golden-set audit — behind one small interface a flow test can fake.

``RealEngine`` runs the package's own, the eval imported lazily (the eval stack pulls torch and
Chroma; ``report``, ``write-baseline`` and ``comment`` runs do not need it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from retrieval_gate.clock import now_iso
from retrieval_gate.evaluation.audit_suite import audit_suite
from retrieval_gate.render.escape import escape_terminal
from retrieval_gate.store.folder import LOCK_STAGE

if TYPE_CHECKING:
    from retrieval_gate.audit import AuditReport
    from retrieval_gate.score.results import Results
    from retrieval_gate.settings import SuiteConfig


class Engine(Protocol):
    """What the flows cannot run for real in a fast test: the store-backed eval (a model, a store)
    and the golden-set audit of the checkout. Everything else the flows call directly — the
    baseline's codec (``artifacts.baseline``), the comparison (``compare``), the renderers
    (``render``) — so a flow test runs the product's own comparison and comment."""

    def evaluate(self, *, suite_config: SuiteConfig, suite: str) -> Results:
        """Run the store-backed eval of the checkout."""
        ...

    def audit(self, *, suite_config: SuiteConfig) -> AuditReport:
        """The golden-set audit of the checkout's KB and cases with ``suite_config``'s ``audit:``
        and gate settings (no model, no store)."""
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
    """The package's eval and audit."""

    def __init__(self, *, log: Callable[[str], None] | None = None) -> None:
        self.log = log or (lambda line: print(escape_terminal(line), file=sys.stderr, flush=True))

    def evaluate(self, *, suite_config: SuiteConfig, suite: str) -> Results:
        from retrieval_gate.evaluation.run import run_eval

        return run_eval(suite_config=suite_config, suite=suite, progress=LogProgress(self.log), created_at=now_iso())

    def audit(self, *, suite_config: SuiteConfig) -> AuditReport:
        return audit_suite(suite_config=suite_config)


def real_engine() -> Engine:
    """The engine the ``action`` command uses (tests replace this factory with a fake engine)."""
    return RealEngine()
