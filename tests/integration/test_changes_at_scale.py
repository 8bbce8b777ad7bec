"""What changed at 10,000 cases: the baseline with rankings stays under 5 MB, and the comparison's
comment (with thousands of changed cases) stays within GitHub's comment limit, saying how many
more there are. Real scoring, baseline update, compare and render; synthetic rankings."""

from __future__ import annotations

import random

from retrieval_gate.artifacts.baseline import baseline_text
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.forge.github import GitHub
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.render.markdown import render_comment
from retrieval_gate.score.assemble import assemble_results

GITHUB_COMMENT_LIMIT = GitHub.limits.comment_chars

N = 10_000
KS = (1, 3, 5, 10)
MEASURES = ("hit", "recall", "ndcg", "mrr", "precision", "map")


def _results(cases: list[Case], *, seed: int):
    rng = random.Random(seed)
    rankings = {}
    for case in cases:
        ids = [f"doc{rng.randrange(5_000_000):07d}" for _ in range(10)]
        if rng.random() < 0.7:
            ids[rng.randrange(10)] = case.gold[0]
        ids = list(dict.fromkeys(ids))
        scores = sorted((round(rng.uniform(0.2, 0.9), 6) for _ in ids), reverse=True)
        rankings[case.id] = RankedList(ids=tuple(ids), scores=tuple(scores))
    case_set = CaseSet(cases=tuple(cases), path="cases.jsonl", sha256="0" * 64, format="jsonl",
                       lines={c.id: i + 1 for i, c in enumerate(cases)})
    return assemble_results(case_set=case_set, rankings=rankings, metrics=metric_specs(KS, MEASURES), ks=KS,
                            config={"retriever": "dense", "model": "m"})


def test_ten_thousand_cases_fit_the_baseline_budget_and_the_comment_limit():
    cases = [Case(id=f"q{i:05d}", query=f"a question about topic {i} and its configuration",
                  gold=(f"doc{i:07d}",), locale=("en", "pt-BR")[i % 2], tags={"team": f"t{i % 7}"})
             for i in range(N)]
    before, after = _results(cases, seed=1), _results(cases, seed=2)
    baseline = update_baseline(baseline=None, results=before, sha="a" * 40, ref="main", timestamp=None)
    text = baseline_text(baseline)
    assert len(text.encode("utf-8")) < 5_000_000
    assert all(len(c.ranked) == 10 and len(c.ranked_scores) == 10 for c in baseline.cases.values())
    comparison = compare(results=after, baseline=baseline, gate=GateSettings(), resamples=2_000)
    lost = [c for c in comparison.changed_cases if c.movement == "lost-hit"]
    assert len(lost) > 1_000  # thousands of lines could not all fit
    comment = render_comment(results=after, comparison=comparison, baseline=baseline)
    assert len(comment) <= GitHub.limits.comment_chars
    assert "<details open><summary>🔎 What changed" in comment
    assert f"{len(lost):,} lost hits" in comment
    assert "more in the HTML report and comparison.json" in comment
