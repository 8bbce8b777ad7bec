"""Which findings a pull request introduced: the PR's audit against its base's, matched by kind
and the ids (or cell) each finding names. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_gate.audit.model import Finding, sort_findings


def introduced(*, current: Sequence[Finding], base: Sequence[Finding]) -> list[Finding]:
    """Findings of ``current`` with no finding of the same key in ``base``, in report order."""
    known = {f.key for f in base}
    return sort_findings([f for f in current if f.key not in known])


def resolved(*, current: Sequence[Finding], base: Sequence[Finding]) -> list[Finding]:
    """Findings of ``base`` that ``current`` no longer has."""
    return introduced(current=base, base=current)
