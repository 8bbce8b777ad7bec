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


def test_a_pr_that_deletes_a_gold_card_is_scored_and_its_comment_says_restore_the_card(github: FakeGitHub, tmp_path):
    """eval → compare → the comment: a deleted gold card is a measured loss (``gold-removed``),
    never exit 2; the title says so; after the merge the refresh goes on."""
    ws = tmp_path / "workspace"
    _write(ws, CARDS)
    github.commit("main", {"retrieval-gate.yml": CONFIG})
    merged = _run(github, ws, tmp_path, 1, event_name="push", ref="refs/heads/main", sha="a" * 40,
                  event={"ref": "refs/heads/main", "repository": {"default_branch": "main"}})
    assert merged.exit_code == 0, merged.stderr
    head = github.branches["main"]
    _write(ws, [card for card in CARDS if card[0] != "refund-card"])  # the PR deletes the gold card
    pr_event = {"number": 6, "pull_request": {"number": 6, "base": {"sha": head, "ref": "main"},
                                             "head": {"sha": "f" * 40, "repo": {"full_name": github.repository}}},
                "repository": {"default_branch": "main"}}
    pr = _run(github, ws, tmp_path, 2, event_name="pull_request", event=pr_event, ref="refs/pull/6/merge",
              sha="c" * 40)
    assert pr.exit_code == 1, pr.stderr  # measured: the floor on hit@1 fails on the loss, not exit 2
    results = json.loads((ws / pr.outputs["results_path"]).read_text(encoding="utf-8"))
    assert results["gold_missing"] == {"c1": ["refund-card"]}
    assert next(c for c in results["cases"] if c["id"] == "c1")["scores"]["hit@1"] == 0.0  # in the denominator
    comparison = json.loads((ws / pr.outputs["comparison_path"]).read_text(encoding="utf-8"))
    assert comparison["gold_removed"] == {"c1": ["refund-card"]} and comparison["gold_unknown"] == {}
    (lost,) = [c for c in comparison["changed_cases"] if c["movement"] == "lost-hit"]
    assert lost["cause"] == "gold-removed"
    (comment,) = github.comments[6]
    title = comment["body"].splitlines()[1]
    assert "1 case lost their gold card: this PR deleted it — restore the card or update the cases" in title
    # merged anyway: the refresh goes on (the deleted card is a loss in the new baseline)
    refreshed = _run(github, ws, tmp_path, 3, event_name="push", ref="refs/heads/main", sha="b" * 40,
                     event={"ref": "refs/heads/main", "repository": {"default_branch": "main"}})
    assert refreshed.exit_code == 0, refreshed.stderr
    baseline = json.loads(github.file_at("main", "baselines/default.json") or "{}")
    assert baseline["cases"]["c1"]["scores"][baseline["score_keys"].index("hit@1")] == 0
    audit = json.loads(github.file_at("main", "baselines/default.audit.json") or "{}")
    assert audit["by_kind"]["orphaned_gold"] == 1
