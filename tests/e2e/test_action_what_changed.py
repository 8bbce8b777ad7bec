"""What changed, through the action with the real engine (bundled model, real Chroma) against the
fake GitHub API: the refresh writes the KB manifest beside the baseline in the same commit; a PR
that empties a gold card's text is read against the manifest *at the base*, its lost case is
``gold-edited``, annotated at its line of the golden set, and the failing gate says the labels
may be stale (exit 1, as for any gate failure)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.fake_github import FakeGitHub
from tests.e2e.test_action_real_engine import CARDS, CASES, _run

pytestmark = pytest.mark.model

CONFIG = ("suites:\n  default:\n    kb: data/kb.jsonl\n    cases: data/cases.jsonl\n    k: [1]\n"
          "    gate:\n      floors:\n        hit@1: 0.9\n")


def _write(ws, cards) -> None:
    (ws / "data").mkdir(parents=True, exist_ok=True)
    (ws / "data" / "kb.jsonl").write_text(
        "".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in cards), encoding="utf-8")
    (ws / "data" / "cases.jsonl").write_text(
        "".join(json.dumps({"id": i, "query": q, "gold": g}) + "\n" for i, q, g in CASES), encoding="utf-8")
    (ws / "retrieval-gate.yml").write_text(CONFIG, encoding="utf-8")


def test_a_pr_that_empties_a_gold_card_fails_as_stale_labels_with_the_case_annotated(github: FakeGitHub, tmp_path):
    ws = tmp_path / "workspace"
    _write(ws, CARDS)
    github.commit("main", {"retrieval-gate.yml": CONFIG})  # the base's gate: a floor on hit@1
    before, n_commits = dict(github.commits[github.branches["main"]]), len(github.commits)
    merged = _run(github, ws, tmp_path, 1, event_name="push", ref="refs/heads/main", sha="a" * 40,
                  event={"ref": "refs/heads/main", "repository": {"default_branch": "main"}})
    assert merged.exit_code == 0, merged.stderr
    head = github.branches["main"]
    assert merged.outputs["baseline_commit"] == head
    manifest = json.loads(github.file_at("main", "baselines/default.kb.json") or "{}")
    assert sorted(manifest["cards"]) == sorted(i for i, _, _ in CARDS)  # written in the baseline's commit
    tree = github.commits[head]
    assert len(github.commits) == n_commits + 1  # one commit wrote all three
    assert sorted(p for p in tree if before.get(p) != tree[p]) == [
        "baselines/default.audit.json", "baselines/default.json", "baselines/default.kb.json"]
    assert json.loads(github.file_at("main", "baselines/default.json") or "{}")["rankings"] is True

    edited = [(i, "Draft", "This article is being rewritten.") if i == "refund-card" else (i, t, x)
              for i, t, x in CARDS]
    _write(ws, edited)
    # the PR's own copy of the manifest is ignored: the base's judges
    (ws / "baselines").mkdir(exist_ok=True)
    (ws / "baselines" / "default.kb.json").write_text('{"cards": {}, "schema_version": 1}', encoding="utf-8")
    pr_event = {"number": 5, "pull_request": {"number": 5, "base": {"sha": head, "ref": "main"},
                                             "head": {"sha": "f" * 40, "repo": {"full_name": github.repository}}},
                "repository": {"default_branch": "main"}}
    pr = _run(github, ws, tmp_path, 2, event_name="pull_request", event=pr_event, ref="refs/pull/5/merge",
              sha="c" * 40)
    assert pr.exit_code == 1, pr.stderr  # the floor failed: exit code unchanged
    comparison = json.loads((ws / pr.outputs["comparison_path"]).read_text(encoding="utf-8"))
    assert [e["card"] for e in comparison["kb_changes"]["edited"]] == ["refund-card"]
    (lost,) = [c for c in comparison["changed_cases"] if c["movement"] == "lost-hit"]
    assert lost["id"] == "c1" and lost["cause"] == "gold-edited" and lost["line"] == 1
    assert lost["gold"] == [{"card": "refund-card", "rank_before": 1, "rank_after": None, "kb_change": "edited"}]
    assert comparison["stale_gold_cards"] == ["refund-card"]
    assert comparison["failures"][0].startswith("1 gold card of lost cases was edited by this PR")
    (comment,) = github.comments[5]
    body = comment["body"]
    assert "1 gold card of lost cases was edited by this PR" in body.splitlines()[1]
    assert "<details open><summary>🔎 What changed" in body and "label it" not in body
    warnings = [line for line in pr.stdout.splitlines() if line.startswith("::warning file=")]
    assert any(line.startswith("::warning file=data/cases.jsonl,line=1,title=retrieval-gate%3A c1 lost its hit::")
               for line in warnings), warnings
    assert "::error title=retrieval-gate%3A gate failed::1 gold card of lost cases was edited by this PR" in pr.stdout
