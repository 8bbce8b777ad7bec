"""Golden-set hygiene (the reference article, Part 9): findings that make the numbers lie, a
coverage matrix, the label review queue, provenance, and the PR subset. Pure: no file, network
or environment access and no settings here; the shell (``cli/audit.py``, ``cli/subset.py``)
loads the inputs and writes the outputs."""

from retrieval_gate.audit.diff import introduced, resolved
from retrieval_gate.audit.model import AuditReport, Finding
from retrieval_gate.audit.params import AuditParams
from retrieval_gate.audit.run import run_audit

__all__ = ["AuditParams", "AuditReport", "Finding", "introduced", "resolved", "run_audit"]
