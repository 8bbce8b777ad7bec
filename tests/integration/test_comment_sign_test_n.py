"""The comment's "too few to be sure" sentence names the n of the sign test the title reads: the
cases with gold paired in both runs, not every paired case (no-answer cases carry no hit@k)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

GOLD, NO_GOLD = 10, 4


@pytest.fixture
def scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    cards = [f"doc{i}" for i in range(GOLD)] + ["other0", "other1"]
    Path("kb.jsonl").write_text("".join(json.dumps({"id": c, "title": c, "text": f"text of {c}"}) + "\n"
                                        for c in cards), encoding="utf-8")
    cases = [{"id": f"q{i}", "query": f"question {i}?", "gold": [f"doc{i}"]} for i in range(GOLD)]
    cases += [{"id": f"n{j}", "query": f"nothing answers {j}?", "gold": []} for j in range(NO_GOLD)]
    Path("cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    base = {c["id"]: [*c["gold"], "other0", "other1"] for c in cases}
    # 3 cases lose their hit, none gains one: one-sided sign test p = (1/2)^3 = 0.125, not significant
    pr = {cid: (["other0", "other1"] if cid in ("q0", "q1", "q2") else ranked) for cid, ranked in base.items()}
    for name, run in (("base", base), ("pr", pr)):
        Path(f"{name}.jsonl").write_text("".join(json.dumps({"id": k, "retrieved": v}) + "\n" for k, v in run.items()),
                                         encoding="utf-8")
    return tmp_path


def test_the_unsure_sentence_counts_the_cases_with_gold(scored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("base", "pr"):
        code, _, err = run_cli(["score", "--run", f"{name}.jsonl", "--cases", "cases.jsonl", "--kb", "kb.jsonl",
                                "--k", "1,3", "--out", f"{name}.json"], capsys)
        assert code == 0, err
    code, _, err = run_cli(["baseline", "update", "--results", "base.json", "--baseline", "baseline.json"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["report", "--results", "pr.json", "--baseline", "baseline.json", "--format", "markdown",
                            "--out", "comment.md"], capsys)
    assert code == 0, err
    text = Path("comment.md").read_text(encoding="utf-8")
    assert f"too few to be sure at n = {GOLD}" in text  # the title: hit@3's overall row, 10 cases with gold
    assert f"but at n = {GOLD} the exact one-sided sign test cannot tell" in text
    assert f"{GOLD + NO_GOLD} paired with the baseline" in text  # every paired case, said where it is meant
