"""The project's example suite (examples/: 48 hand-labelled cards, 62 cases whose gold lists every
card that answers, docs/decisions.md) with the retriever switched to BM25, compared with the committed
baseline (the dense retriever): a hand-made golden set is judged ``complete``, so the gate gives
the verdict trec_eval's reading gives — 9 hits lost, 3 gained, one-sided exact sign test
p = P(X ≥ 9 | n = 12, ½) = (C(12,9) + C(12,10) + C(12,11) + C(12,12)) / 2¹² = 299 / 4096 = 0.073,
not significant: ``pass`` — with no labelling request. Read as a pooled set instead, it asks only
for the cards whose labels decide, and ``label top-up --baseline`` writes exactly those."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import run_cli

CONFIG = REPO / "retrieval-gate.yml"
BASELINE = REPO / "baselines" / "default.json"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (CONFIG.is_file() and BASELINE.is_file() and (REPO / "examples" / "kb").is_dir()):
        pytest.skip("the example suite is not present")
    root = tmp_path_factory.mktemp("examples")
    shutil.copytree(REPO / "examples", root / "examples")
    shutil.copy(CONFIG, root / "retrieval-gate.yml")
    (root / "baselines").mkdir()
    shutil.copy(BASELINE, root / "baselines" / "default.json")
    shutil.copy(BASELINE.with_name("default.kb.json"), root / "baselines" / "default.kb.json")
    return root


def test_bm25_on_the_hand_made_example_set_passes_with_no_labelling_request(
        suite: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(suite)
    code, _, _ = run_cli(["eval", "--retriever", "bm25", "--out", "bm25.json"], capsys)
    assert code == 0
    results = json.loads((suite / "bm25.json").read_text(encoding="utf-8"))
    assert results["config"]["judgements"] == "complete"  # no sidecar, no case drafted from a pool
    code, out, _ = run_cli(["compare", "--results", "bm25.json", "--fail-on-regression", "--out", "cmp.json"], capsys)
    assert code == 0 and "verdict: PASS" in out
    assert "label" not in out.lower()  # no labelling request, no "label them" note
    data = json.loads((suite / "cmp.json").read_text(encoding="utf-8"))
    assert (data["judgements"], data["verdict"], data["gate"]["status"]) == ("complete", "pass", "pass")
    assert "needs_labels" not in data and data["condensed"] is None and not data["unjudged_note"]
    (row,) = [r for r in data["rows"] if r["gated"]]
    assert (row["metric"], row["n_lost"], row["n_gained"]) == ("hit@5", 9, 3)
    assert row["p_one_sided"] == pytest.approx(299 / 4096, abs=1e-12) and row["status"] != "regressed"
    assert all(c["cause"] != "unjudged" for c in data["changed_cases"])
    assert all(c.get("possibly_relevant") is None for c in data["lost_hits"])
    # the comment and the HTML report ask for no labels either
    code, _, _ = run_cli(["report", "--results", "bm25.json", "--comparison", "cmp.json", "--format", "markdown",
                          "--out", "comment.md"], capsys)
    assert code == 0
    comment = (suite / "comment.md").read_text(encoding="utf-8")
    assert "needs labels" not in comment.lower() and "label top-up" not in comment
    code, _, _ = run_cli(["report", "--results", "bm25.json", "--comparison", "cmp.json", "--out", "report.html"],
                         capsys)
    assert code == 0
    page = (suite / "report.html").read_text(encoding="utf-8")
    assert 'id="needs-labels"' not in page and "label top-up" not in page


def test_read_as_pooled_it_asks_only_for_the_cards_that_decide(
        suite: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(suite)
    if not (suite / "bm25.json").is_file():
        assert run_cli(["eval", "--retriever", "bm25", "--out", "bm25.json"], capsys)[0] == 0
    code, out, _ = run_cli(["compare", "--results", "bm25.json", "--fail-on-regression", "--judgements", "pooled",
                            "--out", "pooled.json"], capsys)
    data = json.loads((suite / "pooled.json").read_text(encoding="utf-8"))
    assert code == 1 and data["verdict"] == "needs-labels"
    need = data["needs_labels"]
    # never more than the unjudged cards of either side's top 5 in the cases that can still flip
    # (the 12 cases that moved, and the misses on both sides): far fewer than the full top-up
    assert 0 < need["cards"] < data["unjudged_top_k"] and need["cases"] <= 62
    assert f"needs labels: {need['cards']} cards in {need['cases']} cases" in out
    code, out, _ = run_cli(["label", "top-up", "--results", "bm25.json", "--baseline", "baselines/default.json",
                            "--out", "decisive"], capsys)
    assert code == 0  # the suite says nothing of judgements: the results' complete reading → nothing asked
    assert "nothing to label" in out and not (suite / "decisive").exists()
    pooled = json.loads((suite / "bm25.json").read_text(encoding="utf-8"))
    pooled["config"]["judgements"] = "pooled"
    (suite / "bm25-pooled.json").write_text(json.dumps(pooled), encoding="utf-8")
    code, out, _ = run_cli(["label", "top-up", "--results", "bm25-pooled.json", "--baseline",
                            "baselines/default.json", "--out", "decisive"], capsys)
    assert code == 0
    lines = (suite / "decisive" / "draft.jsonl").read_text(encoding="utf-8").splitlines()
    asked = [(json.loads(line)["id"], c["card"]) for line in lines for c in json.loads(line)["candidates"]]
    # the first sitting only: the fewest cards that, found not relevant, settle the verdict
    assert 0 < len(asked) == need["sitting"] <= need["cards"] and len(lines) <= need["cases"]
    assert f"cards to label: {need['sitting']} in {len(lines)} of 62 cases" in out


def test_top_up_with_a_baseline_compares_one_run(suite: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(suite)
    if not (suite / "bm25.json").is_file():
        assert run_cli(["eval", "--retriever", "bm25", "--out", "bm25.json"], capsys)[0] == 0
    code, _, err = run_cli(["label", "top-up", "--results", "bm25.json", "--results", "bm25.json", "--baseline",
                            "baselines/default.json", "--out", "two"], capsys)
    assert code == 2 and "give exactly one --results (got 2)" in err and not (suite / "two").exists()
