"""Real git repositories of baseline refreshes for the history tests: each refresh is a real
commit of ``baselines/<suite>.json`` (through the real codec) and its KB manifest."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_gate.artifacts.baseline import baseline_text, kb_manifest_text
from retrieval_gate.baseline.model import Baseline, BaselineCase
from retrieval_gate.score.kb_manifest import KbCard
from retrieval_gate.score.results import Completeness, MetricCell

MEASURES = ("hit@5", "recall@5", "ndcg@5")


@dataclass
class Refresh:
    """One refresh: per case (hit@5, nDCG@5, its ranked cards); the settings; the KB's cards → content."""

    cases: Mapping[str, tuple[int, float, Sequence[str]]]
    model: str = "all-MiniLM-L6-v2"
    kb: Mapping[str, str] = field(default_factory=dict)
    cases_hash: str = "c" * 64
    slices: Mapping[str, Sequence[str]] = field(default_factory=dict)  # case → its slices beyond overall
    message: str = "retrieval-gate: refresh baseline"
    date: str = "2026-01-01T00:00:00+00:00"
    measured: str = "0" * 40  # the commit the baseline says it measured


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_baseline(refresh: Refresh, *, suite: str = "default", sha: str = "0" * 40) -> Baseline:
    cases = {}
    by_slice: dict[str, list[str]] = {"overall": list(refresh.cases)}
    for case_id, (hit, ndcg, ranked) in refresh.cases.items():
        extra = list(refresh.slices.get(case_id, ()))
        for name in extra:
            by_slice.setdefault(name, []).append(case_id)
        cases[case_id] = BaselineCase(scores={"hit@5": float(hit), "recall@5": float(hit), "ndcg@5": ndcg},
                                      slices=["overall", *extra], ranked=list(ranked))
    aggregates = {}
    for name, members in by_slice.items():
        aggregates[name] = {m: MetricCell(value=round(sum(cases[c].scores[m] for c in members) / len(members), 6),
                                          n=len(members)) for m in MEASURES}
    kb_hash = _sha(repr(sorted(refresh.kb.items())))
    return Baseline(tool_version="0.1.0", suite=suite, sha=sha, ref="refs/heads/main", updated_at=refresh.date,
                    k=[5], headline_k=5, metrics=list(MEASURES),
                    fingerprint={"config": {"model": refresh.model, "retriever": "dense"}, "k": [5],
                                 "inputs": {"cases": refresh.cases_hash, "kb": kb_hash}},
                    completeness=Completeness(expected=len(cases), scored=len(cases), no_gold=0, failed=0),
                    aggregates=aggregates, cases=cases, rankings=True)


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    if date is not None:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def init_repo(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def commit_text(repo: Path, files: Mapping[str, str], *, message: str, date: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD").strip()


def commit_refresh(repo: Path, refresh: Refresh, *, suite: str = "default", path: str | None = None) -> str:
    path = path or f"baselines/{suite}.json"
    files = {path: baseline_text(make_baseline(refresh, suite=suite, sha=refresh.measured))}
    if refresh.kb:
        cards = {c: KbCard(sha=_sha(v), title=c) for c, v in refresh.kb.items()}
        files[path[:-len(".json")] + ".kb.json"] = kb_manifest_text(cards, suite=suite)
    return commit_text(repo, files, message=refresh.message, date=refresh.date)
