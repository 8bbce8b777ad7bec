"""``report --format junit`` end to end: a golden set, two runs scored by the real CLI, the
baseline from the first, the JUnit file of the second parsed with junitparser (not string
matching). The expected failures are worked out from how the runs were built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from tests.helpers import run_cli

CARDS = [f"card-{i:02d}" for i in range(20)]
# case id → its gold card; q07 has no gold (a no-answer case, not scored without a threshold)
GOLD = {f"q{i:02d}": [f"card-{i:02d}"] for i in range(7)} | {"q07": []}


def _ranking(gold: list[str], rank: int | None) -> list[str]:
    """Ten distinct non-gold cards with the gold card inserted at ``rank`` (1-based; None: absent)."""
    others = [c for c in CARDS if c not in gold][:10]
    if rank is not None and gold:
        others.insert(rank - 1, gold[0])
    return others[:10]


def _write_run(path: Path, ranks: dict[str, int | None], *, leave_out: tuple[str, ...] = ()) -> None:
    lines = []
    for case_id, gold in GOLD.items():
        if case_id in leave_out:
            continue
        ranked = _ranking(gold, ranks.get(case_id, 1))
        lines.append(json.dumps({"id": case_id, "retrieved": ranked,
                                 "scores": [round(1 - r / 20, 3) for r in range(len(ranked))]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture()
def suite(tmp_path: Path) -> Path:
    (tmp_path / "kb.jsonl").write_text("".join(json.dumps({"id": c, "title": c, "text": f"text of {c}"}) + "\n"
                                               for c in CARDS), encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": cid, "query": f"question {cid}", "gold": gold,
                            "locale": "en-US" if i % 2 else "pt-BR"}) + "\n"
                for i, (cid, gold) in enumerate(GOLD.items())), encoding="utf-8")
    return tmp_path


def _score(tmp: Path, run: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["score", "--run", str(run), "--cases", str(tmp / "cases.jsonl"), "--kb",
                            str(tmp / "kb.jsonl"), "--k", "1,5,10", "--out", str(out)], capsys)
    assert code == 0, err


def test_junit_failures_are_exactly_the_lost_and_failed_cases(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base_run, pr_run = suite / "base.jsonl", suite / "pr.jsonl"
    _write_run(base_run, {"q01": 2, "q02": 3})
    # q01: rank 2 → 8 (lost its hit@5); q02: rank 3 → absent (lost); q03: rank 1 → 4 (worse, still a hit);
    # q04: missing from the run (failed); the rest unchanged.
    _write_run(pr_run, {"q01": 8, "q02": None, "q03": 4}, leave_out=("q04",))
    _score(suite, base_run, suite / "base-results.json", capsys)
    _score(suite, pr_run, suite / "pr-results.json", capsys)
    code, _, err = run_cli(["baseline", "update", "--results", str(suite / "base-results.json"), "--baseline",
                            str(suite / "baseline.json")], capsys)
    assert code == 0, err
    out = suite / "junit.xml"
    code, _, err = run_cli(["report", "--results", str(suite / "pr-results.json"), "--baseline",
                            str(suite / "baseline.json"), "--format", "junit", "--out", str(out)], capsys)
    assert code == 0, err

    xml = JUnitXml.fromfile(str(out))
    suites = list(xml)
    assert [s.name for s in suites] == ["default"]
    cases = list(suites[0])
    assert [c.name for c in cases] == list(GOLD)  # the golden set's order, every expected case
    outcome = {c.name: type(c.result[0]).__name__ if c.result else "pass" for c in cases}
    assert {name for name, kind in outcome.items() if kind == "Failure"} == {"q01", "q02"}
    assert {name for name, kind in outcome.items() if kind == "Error"} == {"q04"}
    assert outcome["q07"] == "Skipped"
    assert outcome["q03"] == "pass"
    by_name = {c.name: c for c in cases}
    lost = by_name["q01"].result[0]
    assert isinstance(lost, Failure)
    assert "gold card-01 2 → 8" in lost.message and "cause:" in lost.message
    assert "gold card-02 3 → —" in by_name["q02"].result[0].message
    assert isinstance(by_name["q04"].result[0], Error)
    assert isinstance(by_name["q07"].result[0], Skipped)
    assert "got worse without losing its hit" in (by_name["q03"].system_out or "")
    assert "gold card-03 1 → 4" in by_name["q03"].system_out
    assert by_name["q01"].classname == "default.en-US" and by_name["q00"].classname == "default.pt-BR"
    raw = out.read_text(encoding="utf-8")
    assert 'line="2"' in raw  # q01 is on line 2 of cases.jsonl
    assert suites[0].tests == 8 and suites[0].failures == 2 and suites[0].errors == 1 and suites[0].skipped == 1


def test_junit_gate_testcase_carries_the_failed_rules(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base_run, pr_run = suite / "base.jsonl", suite / "pr.jsonl"
    _write_run(base_run, {})
    _write_run(pr_run, {"q01": None})
    _score(suite, base_run, suite / "base-results.json", capsys)
    _score(suite, pr_run, suite / "pr-results.json", capsys)
    assert run_cli(["baseline", "update", "--results", str(suite / "base-results.json"), "--baseline",
                    str(suite / "baseline.json")], capsys)[0] == 0
    code, _, err = run_cli(["compare", "--results", str(suite / "pr-results.json"), "--baseline",
                            str(suite / "baseline.json"), "--floor", "hit@5=0.95", "--out",
                            str(suite / "comparison.json")], capsys)
    assert code == 1, err  # hit@5 6/7 = 0.857 is below the floor: the gate fails
    out = suite / "junit.xml"
    code, _, err = run_cli(["report", "--results", str(suite / "pr-results.json"), "--comparison",
                            str(suite / "comparison.json"), "--format", "junit", "--out", str(out)], capsys)
    assert code == 0, err
    cases = {c.name: c for c in next(iter(JUnitXml.fromfile(str(out))))}
    gate = cases["gate"]
    assert isinstance(gate.result[0], Failure)
    assert "hit@5" in gate.result[0].message
    assert isinstance(cases["q01"].result[0], Failure)


def test_junit_without_a_baseline_fails_only_failed_cases(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = suite / "run.jsonl"
    _write_run(run, {"q01": None}, leave_out=("q05",))
    _score(suite, run, suite / "results.json", capsys)
    out = suite / "junit.xml"
    code, _, err = run_cli(["report", "--results", str(suite / "results.json"), "--format", "junit", "--out",
                            str(out)], capsys)
    assert code == 0, err
    cases = list(next(iter(JUnitXml.fromfile(str(out)))))
    failing = {c.name for c in cases if c.result and not isinstance(c.result[0], Skipped)}
    assert failing == {"q05"}


@pytest.mark.parametrize(("args", "words"), [
    (["--format", "junit", "--junit-schema", "surefire"],
     "--junit-schema 'surefire': expected one of default, jenkins"),
    (["--format", "markdown", "--junit-schema", "jenkins"], "--junit-schema applies to --format junit only"),
])
def test_a_wrong_junit_schema_is_bad_input(suite: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                           words: str) -> None:
    run = suite / "run.jsonl"
    _write_run(run, {})
    _score(suite, run, suite / "results.json", capsys)
    code, out, err = run_cli(["report", "--results", str(suite / "results.json"), *args, "--out",
                              str(suite / "out.xml")], capsys)
    assert code == 2 and words in err, (out, err)
    assert not (suite / "out.xml").exists()
