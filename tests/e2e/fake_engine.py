"""A fake of OUR ``publish.engine.Engine`` interface — the two operations that need a model, a
store or the checkout's data: canned per-case scores in, the package's real ``Results`` out; the
audit of an empty data set (or the real one). Everything else a flow does — the baseline's codec,
the comparison with its significance test, the comment and the reports — is the product's own.
Fast: no model, no store. The real engine runs in test_action_real_engine.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrieval_gate.artifacts.baseline import baseline_text as write_text
from retrieval_gate.audit import AuditReport, run_audit
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.score.results import CaseResult, Completeness, MetricCell, Results
from retrieval_gate.settings import SuiteConfig

K = 5
METRICS = (f"hit@{K}", f"recall@{K}", f"ndcg@{K}")


@dataclass
class FakeEngine:
    """``scores``: case id → hit@5 (recall and nDCG are derived: recall = hit, nDCG = hit / 2 + 0.25
    for hits, 0 otherwise — arbitrary but fixed), in the slices ``overall`` and ``kind=golden``.

    The golden-set audit is cheap (no model, no store), so ``real_audit=True`` runs the real one
    (``evaluation.audit_suite``) over the workspace's KB and cases; by default the audit is of an
    empty data set (no findings), for tests whose workspace holds no data."""

    scores: dict[str, float] = field(default_factory=lambda: {f"q{i}": 1.0 for i in range(10)})
    calls: list[tuple[str, Any]] = field(default_factory=list)
    configs: list[SuiteConfig] = field(default_factory=list)
    real_audit: bool = False
    audits: list[SuiteConfig] = field(default_factory=list)  # the suite config each audit ran with

    @staticmethod
    def case_scores(hit: float) -> dict[str, float]:
        return {f"hit@{K}": hit, f"recall@{K}": hit, f"ndcg@{K}": hit / 2 + 0.25 if hit else 0.0}

    def evaluate(self, *, suite_config: SuiteConfig, suite: str) -> Results:
        self.configs.append(suite_config)
        self.calls.append(("evaluate", suite))
        cases = [CaseResult(id=cid, query=f"question {cid}", gold=["card"], retrieved=["card"],
                            scores=self.case_scores(hit), slices=["overall", "kind=golden"])
                 for cid, hit in self.scores.items()]
        aggregates = {name: {m: MetricCell(value=sum(c.scores[m] for c in cases) / len(cases), n=len(cases))
                             for m in METRICS} for name in ("overall", "kind=golden")}
        return Results(tool_version="test", suite=suite, created_at="2026-01-01T00:00:00+00:00", k=[K],
                       headline_k=K, metrics=list(METRICS),
                       config={"model": suite_config.model, "k": list(suite_config.k)},
                       completeness=Completeness(expected=len(cases), scored=len(cases), no_gold=0, failed=0),
                       aggregates=aggregates, cases=cases)

    def audit(self, *, suite_config: SuiteConfig) -> AuditReport:
        self.audits.append(suite_config)
        if self.real_audit:
            from retrieval_gate.evaluation.audit_suite import audit_suite

            return audit_suite(suite_config=suite_config)
        return run_audit(cases=[], entries=[], params=suite_config.audit)


def baseline_text(*, scores: dict[str, float], sha: str, history: int = 1, engine: FakeEngine | None = None) -> str:
    """A baseline file as the update flow writes it (the real ``update_baseline`` and codec), for
    ``scores`` at commit ``sha`` (with ``history`` entries, the last one for ``sha``); ``engine``: one
    whose results (golden set, rankings) the baseline records, else a plain ``FakeEngine(scores)``."""
    results = (engine or FakeEngine(scores=scores)).evaluate(suite_config=SuiteConfig(), suite="default")
    baseline = None
    for i in range(history):
        entry_sha = sha if i == history - 1 else f"{i:040x}"
        baseline = update_baseline(baseline=baseline, results=results, sha=entry_sha, ref="refs/heads/main",
                                   timestamp=f"2026-01-0{1 + i % 9}T00:00:00+00:00")
    assert baseline is not None
    return write_text(baseline)
