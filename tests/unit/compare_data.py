"""Test data for the compare tests: results files built from per-case scores, and simulated runs.

The simulated runs model one retrieval system measured twice: each case has a stable latent rank
for each of its gold cards (the system), and every run moves each rank by ±1 with probability
``noise`` (case-level run-to-run noise: ANN jitter, ties, a changed chunk). Two runs of the same
system are therefore exchangeable case by case — the null hypothesis of the paired tests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from retrieval_gate.score.aggregate import aggregate, completeness
from retrieval_gate.score.results import CaseResult, InputInfo, Results

HEADLINE = ("hit@5", "recall@5", "ndcg@5")


def make_case(case_id: str, scores: Mapping[str, float], *, slices: Sequence[str] = ("overall",),
              status: str = "scored", query: str | None = None) -> CaseResult:
    return CaseResult(id=case_id, query=query if query is not None else f"question {case_id}",
                      scores=dict(scores), status=status, slices=list(slices),
                      gold=[] if status == "no_gold" else [f"card-{case_id}"])


def make_results(
    cases: Iterable[CaseResult], *, metrics: Sequence[str] = HEADLINE, k: Sequence[int] = (5,), headline_k: int = 5,
    suite: str = "default", config: Mapping[str, Any] | None = None, kb_sha: str = "kb-1", cases_sha: str = "cases-1",
) -> Results:
    items = list(cases)
    return Results(
        tool_version="test", suite=suite, k=list(k), headline_k=headline_k, metrics=list(metrics),
        config=dict(config if config is not None else {"retriever": "dense", "model": "m1"}),
        inputs={"kb": InputInfo(path="kb", sha256=kb_sha, format="jsonl", count=10),
                "cases": InputInfo(path="cases", sha256=cases_sha, format="jsonl", count=len(items)),
                "run": InputInfo(path="run", sha256=f"run-{len(items)}", format="jsonl", count=len(items))},
        completeness=completeness(items), aggregates=aggregate(items), cases=items,
    )


def hits_results(hits: Sequence[int], *, slices: Sequence[str] = ("overall",), prefix: str = "q") -> Results:
    """One case per value: hit@5 = recall@5 = ndcg@5 = the value (0 or 1)."""
    return make_results([make_case(f"{prefix}{i:04d}", dict.fromkeys(HEADLINE, float(v)), slices=slices)
                         for i, v in enumerate(hits)])


def _ndcg_at_5(ranks: np.ndarray, n_gold: int) -> float:
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= 5)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(5, n_gold)))
    return dcg / ideal


class System:
    """A retrieval system over n cases: latent ranks of 1–2 gold cards per case."""

    def __init__(self, rng: np.random.Generator, n: int):
        self.n_gold = rng.choice([1, 2], size=n, p=[0.7, 0.3])
        self.ranks = rng.geometric(0.3, size=(n, 2))

    def broken(self, cases: Iterable[int]) -> System:
        """The same system with the gold of ``cases`` pushed out of the top 10."""
        out = object.__new__(System)
        out.n_gold, out.ranks = self.n_gold, self.ranks.copy()
        out.ranks[list(cases)] = 50
        return out

    def run(self, rng: np.random.Generator, *, noise: float) -> Results:
        cases = []
        for i, (n_gold, latent) in enumerate(zip(self.n_gold, self.ranks, strict=True)):
            ranks = latent[:n_gold].copy()
            moved = rng.random(n_gold) < noise
            ranks[moved] = np.maximum(1, ranks[moved] + rng.choice([-1, 1], size=int(moved.sum())))
            if n_gold == 2 and ranks[0] == ranks[1]:
                ranks[1] += 1
            top = ranks[ranks <= 5]
            scores = {"hit@5": float(len(top) > 0), "recall@5": len(top) / n_gold,
                      "ndcg@5": _ndcg_at_5(ranks, n_gold)}
            cases.append(make_case(f"q{i:04d}", scores))
        return make_results(cases)
