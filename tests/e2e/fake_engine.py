"""A fake of OUR ``publish.engine.Engine`` interface: canned per-case scores in, the package's real
pydantic models (Results, Baseline, Comparison) out, with arithmetic simple enough to check by
hand. Fast: no model, no store. The real engine runs in test_action_real_engine.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from retrieval_gate.artifacts.baseline import check_json_limits
from retrieval_gate.audit import AuditReport, run_audit
from retrieval_gate.baseline.model import Baseline, BaselineCase, HistoryEntry
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.compare.model import Comparison, ComparisonRow
from retrieval_gate.score.results import CaseResult, Completeness, MetricCell, Results
from retrieval_gate.settings import SuiteConfig

K = 5
METRICS = (f"hit@{K}", f"recall@{K}", f"ndcg@{K}")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


@dataclass
class FakeEngine:
    """``scores``: case id → hit@5 (recall and nDCG are derived: recall = hit, nDCG = hit / 2 + 0.25
    for hits, 0 otherwise — arbitrary but fixed). ``drop`` is the regression threshold.

    The golden-set audit is cheap (no model, no store), so ``real_audit=True`` runs the real one
    (``evaluation.audit_suite``) over the workspace's KB and cases; by default the audit is of an
    empty data set (no findings), for tests whose workspace holds no data."""

    scores: dict[str, float] = field(default_factory=lambda: {f"q{i}": 1.0 for i in range(10)})
    drop: float = 0.02
    calls: list[tuple[str, Any]] = field(default_factory=list)
    configs: list[SuiteConfig] = field(default_factory=list)
    gates: list[GateSettings] = field(default_factory=list)  # the gate each compare was judged with
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
        aggregates = {name: {m: MetricCell(value=_mean([c.scores[m] for c in cases]), n=len(cases)) for m in METRICS}
                      for name in ("overall", "kind=golden")}
        return Results(tool_version="test", suite=suite, created_at="2026-01-01T00:00:00+00:00", k=[K],
                       headline_k=K, metrics=list(METRICS),
                       config={"model": suite_config.model, "k": list(suite_config.k)},
                       completeness=Completeness(expected=len(cases), scored=len(cases), no_gold=0, failed=0),
                       aggregates=aggregates, cases=cases)

    def parse_baseline(self, *, text: str, source: str) -> Baseline:
        self.calls.append(("parse_baseline", source))
        check_json_limits(text, source=source, what="baseline")  # the real engine's contract: the CLI's limits
        return Baseline.model_validate(json.loads(text))

    def dumps_baseline(self, *, baseline: Baseline) -> str:
        return json.dumps(baseline.model_dump(mode="json"), sort_keys=True, indent=2) + "\n"

    def update_baseline(self, *, baseline: Baseline | None, results: Results, sha: str | None, ref: str | None,
                        timestamp: str) -> Baseline:
        self.calls.append(("update_baseline", sha))
        history = [h for h in (baseline.history if baseline else []) if h.sha != sha]
        overall = results.aggregates["overall"]
        history.append(HistoryEntry(sha=sha, ref=ref, timestamp=timestamp,
                                    headline={m: c.value for m, c in overall.items()}, n=overall[METRICS[0]].n))
        return Baseline(tool_version="test", suite=results.suite, sha=sha, ref=ref, updated_at=timestamp,
                        k=results.k, headline_k=results.headline_k, metrics=results.metrics,
                        completeness=results.completeness, aggregates=results.aggregates,
                        cases={c.id: BaselineCase(scores=c.scores, slices=c.slices) for c in results.cases},
                        history=history[-100:])

    def compare(self, *, results: Results, baseline: Baseline, gate: GateSettings,
                kb_before: object = None) -> Comparison:
        self.calls.append(("compare", baseline.sha))
        self.gates.append(gate)
        rows, failures = [], []
        common = [c for c in results.cases if c.id in baseline.cases]
        for metric in METRICS:
            base = _mean([baseline.cases[c.id].scores[metric] for c in common])
            cur = _mean([c.scores[metric] for c in common])
            delta = cur - base
            status = "regressed" if delta < -self.drop else "improved" if delta > self.drop else "ok"
            rows.append(ComparisonRow(slice="overall", metric=metric, baseline=base, current=cur, delta=delta,
                                      n=len(common), status=status))
            if status == "regressed" and gate.fail_on_regression:
                failures.append(f"{metric} overall dropped {delta:+.4f} (n={len(common)})")
        regressed = any(r.status == "regressed" for r in rows)
        return Comparison(suite=results.suite, headline_k=results.headline_k, metrics=results.metrics,
                          baseline_sha=baseline.sha, n_paired=len(common), rows=rows, regressed=regressed,
                          failures=failures, verdict="fail" if failures else "pass",
                          gate=gate.model_dump())

    def audit(self, *, suite_config: SuiteConfig) -> AuditReport:
        self.audits.append(suite_config)
        if self.real_audit:
            from retrieval_gate.evaluation.audit_suite import audit_suite

            return audit_suite(suite_config=suite_config)
        return run_audit(cases=[], entries=[], params=suite_config.audit)

    def marker(self, *, suite: str) -> str:
        return f"<!-- retrieval-gate:{suite} -->"

    def _text(self, results: Results, comparison: Comparison | None, baseline: Baseline | None,
              links: dict[str, str]) -> str:
        lines = [self.marker(suite=results.suite), f"### Retrieval · {results.suite}"]
        if baseline is None:
            lines.append("First run: no baseline yet.")
        else:
            lines.append(f"Baseline {baseline.sha}")
        for metric in METRICS:
            value = results.aggregates["overall"][metric].value
            row = next((r for r in comparison.rows if r.metric == metric), None) if comparison else None
            lines.append(f"- {metric}: {value:.4f}" + (f" (Δ {row.delta:+.4f})" if row else ""))
        lines.extend(f"[{key}]({url})" for key, url in sorted(links.items()))
        return "\n".join(lines) + "\n"

    def render_comment(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], max_chars: int, audit_section: str = "") -> str:
        return (self._text(results, comparison, baseline, links) + audit_section)[:max_chars]

    def render_summary(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None,
                       links: dict[str, str], audit_section: str = "") -> str:
        return "## summary\n" + self._text(results, comparison, baseline, links) + audit_section

    def render_html(self, *, results: Results, comparison: Comparison | None, baseline: Baseline | None) -> str:
        return f"<html><body>{results.suite}</body></html>\n"

    def render_junit(self, *, results: Results, comparison: Comparison | None, config_file: str | None = None) -> str:
        from retrieval_gate.render.junit import render_junit  # pure: the real one

        return render_junit(results=results, comparison=comparison, config_file=config_file)


def baseline_text(engine: FakeEngine, *, scores: dict[str, float], sha: str, history: int = 1) -> str:
    """A baseline file as the update flow would write it, for ``scores`` at commit ``sha``
    (with ``history`` entries, the last one for ``sha``)."""
    maker = FakeEngine(scores=scores)
    results = maker.evaluate(suite_config=SuiteConfig(), suite="default")
    baseline = None
    for i in range(history):
        entry_sha = sha if i == history - 1 else f"{i:040x}"
        baseline = maker.update_baseline(baseline=baseline, results=results, sha=entry_sha, ref="refs/heads/main",
                                         timestamp=f"2026-01-0{1 + i % 9}T00:00:00+00:00")
    assert baseline is not None
    return engine.dumps_baseline(baseline=baseline)
