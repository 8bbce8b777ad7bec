"""Golden-set hygiene (docs/decisions.md, "Labels are evidence to review"): findings that make the numbers lie, a
coverage matrix, the label review queue, provenance, and the PR subset. Pure: no file, network
or environment access and no settings here; the shell (``cli/audit.py``, ``cli/subset.py``)
loads the inputs and writes the outputs.

The names below load on first use: ``settings`` imports ``audit.params`` on every CLI start,
and that must not pull in numpy and the checks."""

from __future__ import annotations

from retrieval_gate.lazy import lazy_exports

_EXPORTS = {
    "AuditParams": "retrieval_gate.audit.params",
    "AuditReport": "retrieval_gate.audit.model",
    "Finding": "retrieval_gate.audit.model",
    "introduced": "retrieval_gate.audit.model",
    "resolved": "retrieval_gate.audit.model",
    "run_audit": "retrieval_gate.audit.run",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports("retrieval_gate.audit", exports=_EXPORTS)
