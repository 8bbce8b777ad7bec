"""What changed and why, end to end on examples/ with the real bundled model and a real Chroma
store: a baseline (with rankings and the KB manifest beside it) from the unchanged suite, then a
PR-like run per scenario through the console entry point (eval → compare → report). Ranks are
checked against the two results files' own rankings, computed here by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.model

KB = EXAMPLES / "kb"
CASES = EXAMPLES / "cases.jsonl"
EMPTIED = {"en-plans-limits": "plans-limits.md", "en-shortcuts-keyboard": "shortcuts-keyboard.md"}
COPIED = "en-payments-refund-card"
COPY_ID = "en-payments-refund-card-copy"


def _cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    return int(info.value.code or 0)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not (KB.is_dir() and CASES.is_file()):
        pytest.skip("examples/ is not present")
    root = tmp_path_factory.mktemp("changes")
    store, results, baseline = root / "store", root / "base.json", root / "baselines" / "default.json"
    assert _cli(["eval", "--kb", str(KB), "--cases", str(CASES), "--store", str(store), "--exact",
                 "--out", str(results)]) == 0
    assert _cli(["baseline", "update", "--results", str(results), "--baseline", str(baseline)]) == 0
    return {"root": root, "store": store, "baseline": baseline, "results": json.loads(results.read_text())}


def _run(suite: dict, name: str, kb: Path, *extra: str, baseline: Path | None = None) -> dict:
    baseline = baseline or suite["baseline"]
    root = suite["root"] / name
    root.mkdir()
    results, comparison, comment = root / "results.json", root / "comparison.json", root / "comment.md"
    assert _cli(["eval", "--kb", str(kb), "--cases", str(CASES), "--store", str(suite["store"]), "--exact",
                 *extra, "--out", str(results)]) == 0
    assert _cli(["compare", "--results", str(results), "--baseline", str(baseline),
                 "--out", str(comparison)]) == 0
    assert _cli(["report", "--results", str(results), "--baseline", str(baseline), "--format", "markdown",
                 "--out", str(comment)]) == 0
    return {"results": json.loads(results.read_text()), "comparison": json.loads(comparison.read_text()),
            "comment": comment.read_text(encoding="utf-8")}


def _ranks(results: dict) -> dict[str, dict[str, int | None]]:
    """Per case: each gold card's 1-based rank in the stored ranking, None when absent."""
    return {c["id"]: {g: c["retrieved"].index(g) + 1 if g in c["retrieved"] else None for g in c["gold"]}
            for c in results["cases"]}


def _copy_kb(root: Path) -> Path:
    kb = root / "kb"
    shutil.copytree(KB, kb)
    return kb


def _emptied_kb(root: Path) -> Path:
    kb = _copy_kb(root)
    for name in EMPTIED.values():
        path = kb / "en-US" / name
        front = path.read_text(encoding="utf-8").split("---", 2)[1]
        path.write_text(f"---{front}---\nThis article is being rewritten.\n", encoding="utf-8")
    return kb


def _section(comment: str) -> str:
    start = comment.index("🔎 What changed")
    return comment[start:comment.index("</details>", start)]


def test_emptied_gold_cards_are_gold_edited_with_their_ranks_and_no_label_hint(suite, tmp_path):
    run = _run(suite, "emptied", _emptied_kb(tmp_path))
    comparison, comment = run["comparison"], run["comment"]
    before, after = _ranks(suite["results"]), _ranks(run["results"])
    moved = {cid for cid, golds in after.items()
             if any(g in EMPTIED for g in golds) and golds != before[cid]}
    assert moved, "emptying the cards moved no case: the scenario tests nothing"
    changed = {c["id"]: c for c in comparison["changed_cases"]}
    for cid in moved:
        assert changed[cid]["cause"] == "gold-edited"
        assert {g["card"]: (g["rank_before"], g["rank_after"]) for g in changed[cid]["gold"]} == \
            {g: (before[cid][g], after[cid][g]) for g in after[cid]}
    assert sorted(e["card"] for e in comparison["kb_changes"]["edited"]) == sorted(EMPTIED)
    assert comparison["kb_changes"]["added"] == comparison["kb_changes"]["removed"] == []
    lost = [c for c in comparison["changed_cases"] if c["movement"] == "lost-hit"]
    assert lost and all(c["cause"] == "gold-edited" for c in lost)
    assert all(c["possibly_relevant"] is None for c in comparison["lost_hits"])
    # the comment: the section is open, names both cards, never asks to label a card
    assert "<details open><summary>🔎 What changed" in comment
    section = _section(comment)
    for card in EMPTIED:
        assert card in section
    assert "label it" not in comment
    # the title: most lost hits are on edited gold
    assert "gold card of lost cases was edited by this PR" in comment.splitlines()[1]
    kb_row = next(line for line in comment.splitlines() if line.startswith("| inputs.kb |"))
    assert kb_row.startswith("| inputs.kb | 48 cards | 2 cards edited (")  # cards, not hashes


def test_a_near_copy_of_a_gold_card_under_a_new_id_is_a_displacer_added(suite, tmp_path):
    kb = _copy_kb(tmp_path)
    source = (kb / "en-US" / "payments-refund-card.md").read_text(encoding="utf-8")
    query = next(json.loads(line)["query"] for line in CASES.read_text(encoding="utf-8").splitlines()
                 if line.strip() and json.loads(line)["id"] == "en-001")
    _, front, body = source.split("---", 2)
    (kb / "en-US" / "payments-refund-card-copy.md").write_text(
        f"---{front.replace(f'id: {COPIED}', f'id: {COPY_ID}')}---\n{query}\n{body}", encoding="utf-8")
    run = _run(suite, "copy", kb)
    comparison = run["comparison"]
    assert [a["card"] for a in comparison["kb_changes"]["added"]] == [COPY_ID]
    changed = {c["id"]: c for c in comparison["changed_cases"]}
    en001 = changed["en-001"]
    assert en001["cause"] == "displacer-added"
    top = run["results"]["cases"][[c["id"] for c in run["results"]["cases"]].index("en-001")]["retrieved"][0]
    assert top == COPY_ID  # independently: the copy is now first
    (displacer,) = [d for d in en001["displaced_by"] if d["card"] == COPY_ID]
    # the examples' golden set is complete (every answering card listed): a card outside the gold is
    # judged not relevant, so the copy counts as judged (read as pooled it would be unjudged)
    assert comparison["judgements"] == "complete"
    assert displacer["rank"] == 1 and displacer["kb_change"] == "added" and displacer["judged"] is True
    assert displacer["margin_over_gold"] is not None and displacer["margin_over_gold"] >= 0
    assert f"displaced by {COPY_ID} (rank 1" in run["comment"]


def test_a_chunking_change_is_the_cause_config(suite):
    run = _run(suite, "chunking", KB, "--chunk-size", "400")
    comparison = run["comparison"]
    assert any(c["key"] == "config.chunking.size" for c in comparison["config_changes"])
    assert comparison["kb_changes"]["edited"] == []  # the same cards: the manifest is by content
    assert comparison["changed_cases"], "a 3× smaller chunk size moved no case"
    assert {c["cause"] for c in comparison["changed_cases"]} == {"config"}


def test_an_identical_rerun_changes_nothing_and_shows_no_section(suite):
    run = _run(suite, "rerun", KB)
    assert run["comparison"]["changed_cases"] == []
    assert run["comparison"]["kb_changes"]["edited"] == []
    assert "What changed" not in run["comment"]
    assert _ranks(run["results"]) == _ranks(suite["results"])


def test_a_schema_3_baseline_without_rankings_or_manifest_lists_lost_hits_and_offers_no_label(suite, tmp_path):
    """The previous release's baseline of examples/ (tests/data, written by that release's own
    eval and baseline update): no rankings, no KB manifest beside it."""
    old = tmp_path / "old" / "default.json"
    old.parent.mkdir()
    old.write_bytes((Path(__file__).parents[1] / "data" / "baseline_schema3.json").read_bytes())
    run = _run(suite, "schema3", _emptied_kb(tmp_path), baseline=old)
    comparison, comment = run["comparison"], run["comment"]
    assert comparison["baseline_rankings"] is False and comparison["kb_changes"] is None
    assert comparison["kb_changed_unseen"] is True
    before = {c: s["scores"].get("hit@5") for c, s in json.loads(old.read_text())["cases"].items()}
    after = {c["id"]: c["scores"].get("hit@5") for c in run["results"]["cases"]}
    lost = sorted(c for c in after if before.get(c) == 1.0 and after[c] == 0.0)
    assert lost and sorted(c["id"] for c in comparison["changed_cases"] if c["movement"] == "lost-hit") == lost
    assert all(g["rank_before"] is None for c in comparison["changed_cases"] for g in c["gold"])
    assert {c["cause"] for c in comparison["changed_cases"]} <= {"ranking"}
    assert comment.count("ranks before are unknown") == 1 and comment.count("no KB manifest beside it") == 1
    assert "label it" not in comment
