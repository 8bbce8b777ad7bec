"""The action's PR run writes its own ``label top-up`` (``out_dir/top-up/``: draft.jsonl,
label.html, draft.md) beside the reports, and the comment, the job summary and the HTML report
link to exactly that top-up, with its card count. The engine is the fake one, whose results name
a real KB and golden set in the workspace and rank cards nobody judged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrieval_gate.load.kb import load_kb
from retrieval_gate.score.kb_manifest import kb_manifest
from retrieval_gate.score.results import InputInfo, Results
from retrieval_gate.settings import SuiteConfig
from tests.e2e.fake_engine import FakeEngine, baseline_text

BASELINE = "baselines/default.json"
CARDS = ["card", "other-a", "other-b", "other-c"]


@dataclass
class RankingEngine(FakeEngine):
    """FakeEngine whose cases rank ``card`` (the gold) and then cards no judgement covers, and whose
    results name the workspace's KB and golden set."""

    def evaluate(self, *, suite_config: SuiteConfig, suite: str) -> Results:
        results = super().evaluate(suite_config=suite_config, suite=suite)
        cases = [c.model_copy(update={"retrieved": ["card", "other-a", "other-b"] if c.id == "q0" else ["card"]})
                 for c in results.cases]
        inputs = {"kb": InputInfo(path="kb.jsonl", sha256="x", format="jsonl", count=len(CARDS)),
                  "cases": InputInfo(path="cases.jsonl", sha256="x", format="jsonl", count=len(cases))}
        # the golden set has a "not relevant" sidecar: pool provenance, so the real engine records
        # config.judgements = pooled (compare.judgements); a complete set gets no top-up at all
        config = {**results.config, "judgements": "pooled"}
        return results.model_copy(update={"cases": cases, "inputs": inputs, "config": config})


@pytest.fixture
def engine() -> FakeEngine:
    return RankingEngine(scores={f"q{i}": 1.0 for i in range(6)})


def test_the_pr_run_writes_its_top_up_and_links_to_exactly_it(world, github):
    ws = world.workspace
    (ws / "kb.jsonl").write_text("".join(json.dumps({"id": c, "title": c.title(), "text": f"text of {c}"}) + "\n"
                                         for c in CARDS))
    (ws / "cases.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "query": f"question q{i}", "gold": ["card"]})
                                            + "\n" for i in range(6)))
    sha = kb_manifest(load_kb(ws / "kb.jsonl").cards)["other-b"].sha  # judged at its content now: not asked again
    (ws / "cases.not-relevant.jsonl").write_text(json.dumps({"case": "q0", "card": "other-b", "sha": sha, "at": ""})
                                                 + "\n")
    base = github.commit("main", {BASELINE: baseline_text(scores={f"q{i}": 1.0 for i in range(6)}, sha="b" * 40)},
                         message="baseline [skip ci]")
    run = world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base), ref="refs/pull/7/merge",
                    sha="c" * 40)
    assert run.exit_code == 0, run.stderr
    out = ws / Path(run.outputs["results_path"]).parent
    folder = out / "top-up"
    assert sorted(p.name for p in folder.iterdir()) == ["draft.jsonl", "draft.md", "label.html"]
    (entry,) = [json.loads(line) for line in (folder / "draft.jsonl").read_text().splitlines()]
    assert entry["id"] == "q0" and [c["card"] for c in entry["candidates"]] == ["other-a"] and entry["top_up"]
    (comment,) = github.comments[7]
    assert "**1 card to label** in the top 5 of 1 case: no judgement covers" in comment["body"]
    assert f"{(folder / 'label.html').relative_to(ws).as_posix()}" in comment["body"].replace("\\", "")
    assert "label apply labels.jsonl --draft" in comment["body"]
    assert "**1 card to label**" in run.summary
    html = (ws / run.outputs["html_path"]).read_text()
    assert 'href="top-up/label.html"' in html and "1 card to label" in html


@dataclass
class CompleteEngine(RankingEngine):
    """The same rankings over a golden set judged complete (no sidecar, no drafted case)."""

    def evaluate(self, *, suite_config: SuiteConfig, suite: str) -> Results:
        results = super().evaluate(suite_config=suite_config, suite=suite)
        return results.model_copy(update={"config": {**results.config, "judgements": "complete"}})


def test_on_a_complete_golden_set_the_pr_run_writes_no_top_up_and_asks_for_no_labels(world, github):
    world.engine = CompleteEngine(scores={f"q{i}": 1.0 for i in range(6)})
    ws = world.workspace
    (ws / "kb.jsonl").write_text("".join(json.dumps({"id": c, "title": c.title(), "text": f"text of {c}"}) + "\n"
                                         for c in CARDS))
    (ws / "cases.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "query": f"question q{i}", "gold": ["card"]})
                                            + "\n" for i in range(6)))
    base = github.commit("main", {BASELINE: baseline_text(scores={f"q{i}": 1.0 for i in range(6)}, sha="b" * 40)},
                         message="baseline [skip ci]")
    run = world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base), ref="refs/pull/7/merge",
                    sha="c" * 40)
    assert run.exit_code == 0, run.stderr
    out = ws / Path(run.outputs["results_path"]).parent
    assert not (out / "top-up").exists()
    (comment,) = github.comments[7]
    assert "to label" not in comment["body"] and "top-up" not in comment["body"]
