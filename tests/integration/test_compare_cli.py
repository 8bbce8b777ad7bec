"""``baseline update`` and ``compare`` end to end through the CLI, on results files written by
``retrieval-gate score`` from small runs: exit codes 0 / 1 / 2 and what is written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_gate.cli import main

N_CASES = 40
LOST = 15  # cases whose gold drops out of the top 10 in the regressed run


def write_dataset(folder: Path) -> None:
    cases = []
    for i in range(N_CASES):
        cases.append({"id": f"q{i:02d}", "query": f"question {i}?", "gold": [f"doc{i}"],
                      "locale": "pt-BR" if i % 2 else "en-US", "form": "GAP" if i % 3 == 0 else "MATCH"})
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    for name, lost in (("base", 0), ("same", 0), ("worse", LOST), ("surfacing", LOST)):
        lines = []
        for i in range(N_CASES):
            filler = [f"other{j}" for j in range(10)]
            ranked = filler if i < lost else [*filler[: i % 3], f"doc{i}", *filler[i % 3 :]]
            if name == "surfacing" and i < lost:  # a new system: 5 cards nobody judged above the gold card
                ranked = [*(f"new{i}-{j}" for j in range(5)), f"doc{i}", *filler[:4]]
            lines.append(json.dumps({"id": f"q{i:02d}", "retrieved": ranked}))
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def exit_code(*args: str) -> int:
    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Once per module: a dataset, three runs scored by ``retrieval-gate score`` (base, same,
    worse) and a baseline made from base by ``retrieval-gate baseline update``."""
    folder = tmp_path_factory.mktemp("scored")
    write_dataset(folder)
    for name in ("base", "same", "worse", "surfacing"):
        assert exit_code("score", "--run", str(folder / f"{name}.jsonl"), "--cases", str(folder / "cases.jsonl"),
                         "--k", "1,3,5,10", "--out", str(folder / f"{name}.results.json")) == 0
    assert exit_code("baseline", "update", "--results", str(folder / "base.results.json"),
                     "--baseline", str(folder / "baselines" / "default.json"), "--sha", "abc1234", "--ref", "main") == 0
    return folder


@pytest.fixture
def workdir(scored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working folder holding copies of the scored results and the baseline."""
    for name in ("base", "same", "worse", "surfacing"):
        shutil.copy(scored / f"{name}.results.json", tmp_path)
    shutil.copy(scored / "cases.jsonl", tmp_path)
    shutil.copy(scored / "surfacing.jsonl", tmp_path)
    (tmp_path / "baselines").mkdir()
    shutil.copy(scored / "baselines" / "default.json", tmp_path / "baselines")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_unchanged_run_passes_with_the_gate_on(workdir, capsys):
    code, out, _ = cli(capsys, "compare", "--results", "same.results.json", "--baseline", "baselines/default.json",
                       "--fail-on-regression", "--out", "comparison.json")
    assert code == 0
    assert "verdict: PASS" in out
    data = json.loads((workdir / "comparison.json").read_text(encoding="utf-8"))
    assert data["verdict"] == "pass" and data["like_for_like"] is True
    # nothing changed: every row is unchanged, its MDE from the no-change prior
    assert data["schema_version"] == 6
    # scored from a list-form golden set with no pool provenance: judged complete (as trec_eval reads it)
    assert data["judgements"] == "complete" and data["rescored_cases"] == 0 and "needs_labels" not in data
    assert {row["status"] for row in data["rows"]} == {"unchanged"}
    assert {row["mde_method"] for row in data["rows"]} == {"prior"}


def test_regressed_run_exits_0_report_only_and_1_with_the_gate(workdir, capsys):
    code, out, _ = cli(capsys, "compare", "--results", "worse.results.json", "--baseline", "baselines/default.json",
                       "--out", "report-only.json")
    assert code == 0
    assert "regressed, report only" in out
    data = json.loads((workdir / "report-only.json").read_text(encoding="utf-8"))
    hit = next(r for r in data["rows"] if r["metric"] == "hit@5" and r["slice"] == "overall")
    assert hit["delta"] == pytest.approx(-LOST / N_CASES)
    assert hit["n"] == N_CASES and hit["status"] == "regressed"
    assert [c["id"] for c in data["lost_hits"]][:1] == ["q00"]  # gold at rank 1 before: most impactful
    assert len(data["lost_hits"]) == LOST

    code, out, _ = cli(capsys, "compare", "--results", "worse.results.json", "--baseline", "baselines/default.json",
                       "--fail-on-regression", "--out", "gated.json")
    assert code == 1
    assert "verdict: FAIL" in out
    assert json.loads((workdir / "gated.json").read_text(encoding="utf-8"))["verdict"] == "fail"


def test_a_pr_that_surfaces_unjudged_cards_needs_labels_exit_1_or_0_with_unjudged_warn(workdir, capsys):
    # 15 cases: the PR ranks 5 cards nobody judged above the gold card (out of the top 5). Read as a
    # complete set (these results carry no pool provenance): 15 hits lost, the gate fails.
    code, out, _ = cli(capsys, "compare", "--results", "surfacing.results.json", "--baseline",
                       "baselines/default.json", "--fail-on-regression")
    assert code == 1 and "verdict: FAIL" in out and "label" not in out
    # Read as a pooled set: unjudged = not relevant, 15 hits lost, the gate fails; any of the 5 new
    # cards of a case relevant, that case is still a hit: nothing lost, it passes. The 75 new cards
    # decide (the baseline's 4 filler cards do not: its gold card is first, a hit whatever they are).
    code, out, _ = cli(capsys, "compare", "--results", "surfacing.results.json", "--baseline",
                       "baselines/default.json", "--fail-on-regression", "--out", "needs.json",
                       "--judgements", "pooled")
    assert code == 1
    assert "verdict: NEEDS-LABELS" in out and "needs labels: 75 cards in 15 cases decide the verdict" in out
    # the top-up it names is this comparison's own, read as compare was told (runs as printed)
    printed = out.split("label them: ", 1)[1].splitlines()[0]
    assert printed.startswith("retrieval-gate label top-up --results surfacing.results.json "
                              "--baseline baselines/default.json --out top-up")
    assert printed.endswith(" --judgements pooled") and "--suite" not in printed
    data = json.loads((workdir / "needs.json").read_text(encoding="utf-8"))
    assert (data["verdict"], data["gate"]["status"], data["condensed"]["verdict"]) == ("needs-labels",) * 2 + ("pass",)
    # the first sitting: 5 of those cases, their 25 cards found not relevant, confirm 5 losses with
    # nothing gained: one-sided p = (½)⁵ = 1/32 < 0.05 (4 cases: 1/16, not enough)
    assert data["judgements"] == "pooled" and data["needs_labels"] == {
        "cards": 75, "cases": 15, "sitting": 25, "if_relevant": "pass", "if_not_relevant": "fail"}
    # 175 unjudged cards in the PR's top 5 = 15 cases × 5 new cards + 25 cases × 4 filler cards
    assert data["unjudged_top_k"] == 175
    # judged@5 on both sides: only the gold card of each case is judged. Baseline: 1/5 in every
    # case; PR: 0 in the 15 surfacing cases (the gold card is 6th), 1/5 in the 25 others
    cell = data["judged"]["overall"]["judged@5"]
    assert cell["baseline"] == pytest.approx(0.2) and cell["current"] == pytest.approx(25 * 0.2 / N_CASES)
    # with gate.unjudged: warn (flag or config), the same status, exit 0
    code, out, _ = cli(capsys, "compare", "--results", "surfacing.results.json", "--baseline",
                       "baselines/default.json", "--fail-on-regression", "--unjudged", "warn", "--judgements", "pooled")
    assert code == 0 and "verdict: NEEDS-LABELS" in out
    (workdir / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    baseline: baselines/default.json\n    judgements: pooled\n    gate:\n"
        "      fail_on_regression: true\n      unjudged: warn\n", encoding="utf-8")
    assert cli(capsys, "compare", "--results", "surfacing.results.json")[0] == 0
    # labelled: the 75 cards judged not relevant (the sidecar `label apply` writes) → rescored, read
    # as pooled (the sidecar is pool provenance): the 15 hits are lost whatever the rest: a failure
    # the labels support
    (workdir / "retrieval-gate.yml").unlink()
    (workdir / "cases.not-relevant.jsonl").write_text("".join(
        json.dumps({"case": f"q{i:02d}", "card": f"new{i}-{j}", "sha": "0" * 12, "at": "2026-01-01"}) + "\n"
        for i in range(LOST) for j in range(5)), encoding="utf-8")
    assert exit_code("score", "--run", "surfacing.jsonl", "--cases", "cases.jsonl", "--k", "1,3,5,10",
                     "--out", "labelled.results.json") == 0
    code, out, _ = cli(capsys, "compare", "--results", "labelled.results.json", "--baseline",
                       "baselines/default.json", "--fail-on-regression", "--out", "labelled.json")
    data = json.loads((workdir / "labelled.json").read_text(encoding="utf-8"))
    assert code == 1 and (data["verdict"], data["gate"]["status"], data["condensed"]["verdict"]) == ("fail",) * 3
    assert data["judgements"] == "pooled" and "needs_labels" not in data
    assert data["unjudged_top_k"] == 100  # the 75 labelled cards are judged now


def test_a_generous_max_drop_lets_the_regression_through(workdir, capsys):
    code, _, _ = cli(capsys, "compare", "--results", "worse.results.json", "--baseline", "baselines/default.json",
                     "--fail-on-regression", "--max-drop", "0.5")
    assert code == 0


@pytest.mark.parametrize(("floor", "code"), [("hit@5=0.9", 0), ("hit@5=1.0", 0), ("hit@5:locale=pt-BR=0.5", 0),
                                             ("hit@1=0.5", 1), ("nDCG@10:form=MATCH=0.99", 1)])
def test_floors_exit_1_when_not_met(workdir, capsys, floor, code):
    result, out, _ = cli(capsys, "compare", "--results", "same.results.json", "--baseline", "baselines/default.json",
                         "--floor", floor)
    assert result == code
    assert ("is below the floor" in out) == (code == 1)


def test_the_config_file_turns_the_gate_on_and_flags_override_it(workdir, capsys):
    (workdir / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    baseline: baselines/default.json\n    gate:\n      fail_on_regression: true\n",
        encoding="utf-8")
    code, _, _ = cli(capsys, "compare", "--results", "worse.results.json")
    assert code == 1
    code, _, _ = cli(capsys, "compare", "--results", "worse.results.json", "--no-fail-on-regression")
    assert code == 0


@pytest.mark.parametrize(("args", "message"), [
    ({"--floor": "hit@5"}, "--floor 'hit@5': expected METRIC=VALUE"),
    ({"--floor": "hit@7=0.5"}, "hit@7 is not measured"),
    ({"--max-drop": "lots"}, "--max-drop 'lots'"),
    ({"--results": "missing.json"}, "missing.json: file not found"),
    ({"--baseline": "base.results.json"}, "this is a results file"),
])
def test_bad_input_exits_2(workdir, capsys, args, message):
    flags = {"--results": "same.results.json", "--baseline": "baselines/default.json", **args}
    code, _, err = cli(capsys, "compare", *[part for pair in flags.items() for part in pair])
    assert code == 2
    assert err.startswith("error: ")
    assert message in err


@pytest.mark.parametrize("content", ['{"schema_version": 7, "future": true}\n', "not json at all\n", ""])
def test_baseline_update_never_overwrites_a_file_it_cannot_read(workdir, capsys, content):
    target = workdir / "baselines" / "broken.json"
    target.write_text(content, encoding="utf-8")
    code, _, err = cli(capsys, "baseline", "update", "--results", "same.results.json", "--baseline", str(target))
    assert code == 2
    assert str(target) in err
    assert target.read_text(encoding="utf-8") == content
    code, _, err = cli(capsys, "compare", "--results", "same.results.json", "--baseline", str(target))
    assert code == 2 and str(target) in err


def test_baseline_update_appends_history(workdir, capsys):
    code, out, _ = cli(capsys, "baseline", "update", "--results", "worse.results.json",
                       "--baseline", "baselines/default.json", "--sha", "def5678", "--history-limit", "5")
    assert code == 0 and "updated baselines/default.json" in out
    data = json.loads((workdir / "baselines" / "default.json").read_text(encoding="utf-8"))
    assert [e["sha"] for e in data["history"]] == ["abc1234", "def5678"]
    assert [e["headline"]["hit@5"] for e in data["history"]] == [1.0, pytest.approx(1 - LOST / N_CASES)]
    assert data["sha"] == "def5678"


def test_the_console_script_exit_codes(workdir):
    """The same through a real process: 1 for a failed gate, 2 for a bad baseline."""
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "retrieval_gate", *args], cwd=workdir, capture_output=True,
                              text=True, check=False)

    failed = run("compare", "--results", "worse.results.json", "--baseline", "baselines/default.json",
                 "--fail-on-regression")
    assert failed.returncode == 1, failed.stderr
    bad = run("compare", "--results", "worse.results.json", "--baseline", "worse.results.json")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: worse.results.json: this is a results file")


def test_the_comparison_file_is_byte_identical_on_a_rerun(workdir, capsys):
    for name in ("first.json", "second.json"):
        code, _, _ = cli(capsys, "compare", "--results", "worse.results.json", "--baseline", "baselines/default.json",
                         "--out", name)
        assert code == 0
    first = (workdir / "first.json").read_bytes()
    assert first == (workdir / "second.json").read_bytes()
    code, _, _ = cli(capsys, "compare", "--results", "worse.results.json", "--baseline", "baselines/default.json",
                     "--seed", "1", "--out", "third.json")
    assert (workdir / "third.json").read_bytes() != first  # the seed is what fixes the draws


def test_a_bad_judgements_value_exits_2_naming_the_flag_or_the_key(workdir, capsys):
    code, _, err = cli(capsys, "compare", "--results", "same.results.json", "--baseline", "baselines/default.json",
                       "--judgements", "partial")
    assert code == 2 and "--judgements 'partial': expected complete or pooled" in err
    (workdir / "retrieval-gate.yml").write_text("suites:\n  default:\n    judgements: partial\n", encoding="utf-8")
    code, _, err = cli(capsys, "compare", "--results", "same.results.json", "--baseline", "baselines/default.json")
    assert code == 2 and "retrieval-gate.yml" in err and "judgements" in err and "Traceback" not in err
