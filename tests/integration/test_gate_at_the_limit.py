"""The gate at the limit of what 41 cases can show, end to end through ``score``, ``baseline
update`` and ``compare --fail-on-regression``: with nothing gained, the exact one-sided sign test
first rejects at 5 lost cases, p = (½)⁵ = 1/32 < 0.05; 4 lost (1/16) and 3 lost / 3 gained do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.cli import main

N = 41
FILLER = [f"other{j}" for j in range(10)]


def code_of(*args: str) -> int:
    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def write_run(path: Path, *, missing: set[int]) -> None:
    """One ranked list per case: the case's gold card at rank 2, or absent for ``missing``."""
    lines = [json.dumps({"id": f"q{i:02d}", "retrieved": FILLER if i in missing else [FILLER[0], f"doc{i}",
                                                                                      *FILLER[1:]]})
             for i in range(N)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """41 single-gold cases; the baseline misses cases 35–40 (so gains are possible)."""
    folder = tmp_path_factory.mktemp("limit")
    cases = [{"id": f"q{i:02d}", "query": f"question {i}?", "gold": [f"doc{i}"]} for i in range(N)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    baseline_missing = set(range(35, 41))
    runs = {"base": baseline_missing,
            "lost5": baseline_missing | set(range(5)),
            "lost4": baseline_missing | set(range(4)),
            "lost3gained3": (baseline_missing - {35, 36, 37}) | {0, 1, 2},
            "lost3": baseline_missing | {0, 1, 2},
            "same": baseline_missing}
    for name, missing in runs.items():
        write_run(folder / f"{name}.jsonl", missing=missing)
        assert code_of("score", "--run", str(folder / f"{name}.jsonl"), "--cases", str(folder / "cases.jsonl"),
                       "--k", "1,5,10", "--out", str(folder / f"{name}.results.json")) == 0
    assert code_of("baseline", "update", "--results", str(folder / "base.results.json"),
                   "--baseline", str(folder / "baseline.json"), "--sha", "abc1234", "--ref", "main") == 0
    return folder


def compare(suite: Path, name: str) -> tuple[int, dict]:
    out = suite / f"{name}.comparison.json"
    code = code_of("compare", "--results", str(suite / f"{name}.results.json"), "--baseline",
                   str(suite / "baseline.json"), "--fail-on-regression", "--out", str(out))
    return code, json.loads(out.read_text(encoding="utf-8"))


def hit_row(comparison: dict) -> dict:
    (row,) = [r for r in comparison["rows"] if r["metric"] == "hit@5" and r["slice"] == "overall"]
    return row


def test_five_lost_and_none_gained_fail_the_gate_at_p_one_in_32(suite):
    code, comparison = compare(suite, "lost5")
    row = hit_row(comparison)
    assert (row["n"], row["n_lost"], row["n_gained"]) == (41, 5, 0)
    assert row["p_one_sided"] == pytest.approx(1 / 32) and row["p_adjusted"] == pytest.approx(1 / 32)
    assert row["status"] == "regressed" and code == 1 and comparison["verdict"] == "fail"
    assert comparison["failures"] == ["hit@5 on overall: dropped by 0.122 (5 lost, 0 gained of 41 paired; "
                                      "one-sided p = 0.031), more than the max drop 0.02"]


def test_four_lost_and_none_gained_pass_at_p_one_in_16(suite):
    code, comparison = compare(suite, "lost4")
    row = hit_row(comparison)
    assert (row["n_lost"], row["n_gained"]) == (4, 0)
    assert row["p_one_sided"] == pytest.approx(1 / 16) and row["status"] != "regressed"
    assert code == 0 and comparison["verdict"] == "pass"


def test_three_lost_and_three_gained_pass(suite):
    code, comparison = compare(suite, "lost3gained3")
    row = hit_row(comparison)
    assert (row["n_lost"], row["n_gained"], row["delta"]) == (3, 3, 0.0)
    # Δ = 0: the drop side, P(B ≤ 3) for B ~ Bin(6, ½) = (1 + 6 + 15 + 20)/64 = 42/64
    assert row["p_one_sided"] == pytest.approx(42 / 64)
    assert code == 0 and comparison["verdict"] == "pass"


def title_of(suite: Path, name: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    capsys.readouterr()
    assert code_of("report", "--results", str(suite / f"{name}.results.json"), "--baseline",
                   str(suite / "baseline.json"), "--format", "markdown") == 0
    text = capsys.readouterr().out
    return text.splitlines()[1], text


def test_the_title_tells_an_identical_rerun_from_lost_cases_counts_first(suite, capsys):
    same, same_text = title_of(suite, "same", capsys)
    lost3, _ = title_of(suite, "lost3", capsys)
    both, _ = title_of(suite, "lost3gained3", capsys)
    lost5, _ = title_of(suite, "lost5", capsys)
    assert same == "### ⚪ Retrieval · default · no case changed"
    assert lost3 == "### 🟡 Retrieval · default · 3 lost, 0 gained — too few to be sure at n = 41"
    assert both == "### ⚖️ Retrieval · default · 3 lost, 3 gained — no net effect"
    assert lost5 == "### 🔴 Retrieval · default · 5 lost, 0 gained — hit@5 regressed (a significant drop)"
    assert "noise" not in same_text
    # no case moved: the title, one sentence and the headline table; the rest collapsed
    visible = same_text.split("<details>")[0].strip().splitlines()
    assert len(visible) <= 12, visible
