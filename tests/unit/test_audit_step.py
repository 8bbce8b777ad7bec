"""Pure parts of the audit in the action: where a suite's audit lives beside its baseline."""

from __future__ import annotations

import pytest

from retrieval_gate.publish.audit_step import audit_repo_path


@pytest.mark.parametrize(("baseline", "audit"), [
    ("baselines/default.json", "baselines/default.audit.json"),
    ("baselines/pr.json", "baselines/pr.audit.json"),
    ("eval/retrieval/full.json", "eval/retrieval/full.audit.json"),  # a config's own `baseline:` path
    ("baselines/odd.baseline", "baselines/odd.baseline.audit.json"),  # no .json: the suffix is appended
    ("b.json.json", "b.json.audit.json"),
])
def test_the_audit_sits_beside_its_baseline(baseline, audit):
    assert audit_repo_path(baseline) == audit
