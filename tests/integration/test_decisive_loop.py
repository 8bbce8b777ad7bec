"""The decisive-labels loop through the real CLI, on a pooled golden set: ``compare`` says
``needs-labels`` with the decisive cards, ``label top-up --baseline`` writes the first sitting,
``label apply`` merges the labels, and the next ``compare`` gives the verdict or how many cards can
still change it — the baseline rescored with the labels applied since. Verdicts worked by hand from
the exact one-sided sign test: l lost and g gained fail at p = P(X ≥ l | n = l + g, ½) < 0.05."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from retrieval_gate.cli import main

N = 10  # cases; in each the PR ranks an unjudged card new{i} above the gold card doc{i} (judged at k = 1)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    cards = [*(f"doc{i}" for i in range(N)), *(f"new{i}" for i in range(N)), *(f"other{j}" for j in range(4))]
    (tmp_path / "kb.jsonl").write_text("".join(json.dumps({"id": c, "title": c, "text": f"the text of {c}"}) + "\n"
                                               for c in cards), encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "query": f"question {i}?", "gold": [f"doc{i}"]}) + "\n" for i in range(N)),
        encoding="utf-8")
    (tmp_path / "base.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "retrieved": [f"doc{i}", "other0", "other1"]}) + "\n" for i in range(N)),
        encoding="utf-8")
    (tmp_path / "pr.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "retrieved": [f"new{i}", f"doc{i}", "other0"]}) + "\n" for i in range(N)),
        encoding="utf-8")
    return tmp_path


def score(capsys, name: str) -> None:
    code, _, err = cli(capsys, "score", "--run", f"{name}.jsonl", "--cases", "cases.jsonl", "--kb", "kb.jsonl",
                       "--k", "1,3", "--headline-k", "1", "--judgements", "pooled", "--out", f"{name}.json")
    assert code == 0, err


def compared(capsys, name: str) -> tuple[int, str, dict]:
    code, out, _ = cli(capsys, "compare", "--results", f"{name}.json", "--baseline", "baseline.json",
                       "--fail-on-regression", "--out", f"{name}.cmp.json")
    return code, out, json.loads(Path(f"{name}.cmp.json").read_text(encoding="utf-8"))


def label(capsys, folder: str, relevant: set[str]) -> list[tuple[str, str]]:
    """Judge every card of the sitting in ``folder`` (relevant when in ``relevant``) and apply."""
    asked, lines = [], []
    for line in Path(folder, "draft.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        for candidate in entry["candidates"]:
            asked.append((entry["id"], candidate["card"]))
            lines.append(json.dumps({"case": entry["id"], "card": candidate["card"],
                                     "grade": int(candidate["card"] in relevant), "sha": candidate["sha"],
                                     "at": "2026-12-07T00:00:00Z"}))
    Path(folder, "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = cli(capsys, "label", "apply", f"{folder}/labels.jsonl", "--draft", f"{folder}/draft.jsonl",
                       "--cases", "cases.jsonl", "--kb", "kb.jsonl")
    assert code == 0, err
    return asked


def test_a_sitting_at_a_time_until_the_verdict_is_decided(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    score(capsys, "base")
    assert cli(capsys, "baseline", "update", "--results", "base.json", "--baseline", "baseline.json")[0] == 0
    score(capsys, "pr")
    # as labelled: 10 lost, 0 gained (p = 1/1024): fail; with every new_i relevant: 10 ties: pass
    code, out, data = compared(capsys, "pr")
    assert code == 1 and data["verdict"] == "needs-labels"
    # the first sitting: 5 confirmed losses with nothing gained fail (p = 1/32); 4 do not (1/16)
    assert data["needs_labels"] == {"cards": 10, "cases": 10, "sitting": 5, "if_relevant": "pass",
                                    "if_not_relevant": "fail"}
    # the command compare names runs as printed (its own files, the run's KB and cases, a free folder)
    printed = out.split("label them: ", 1)[1].splitlines()[0]
    assert printed.startswith("retrieval-gate label top-up --results pr.json --baseline baseline.json --out top-up")
    code, out, _ = cli(capsys, *shlex.split(printed)[1:])
    assert code == 0 and "cards to label: 5 in 5 of 10 cases" in out
    # round 1: new0 answers its question; new1 … new4 do not
    asked = label(capsys, "top-up", relevant={"new0"})
    assert asked == [(f"q{i}", f"new{i}") for i in range(5)]
    score(capsys, "pr")
    code, out, data = compared(capsys, "pr")
    # q0 is a tie now (both hit at 1); 4 losses confirmed; q5 … q9 open: labelled for the PR, 4 lost,
    # 0 gained, p = 1/16: pass; against, 9 lost: fail — still open, and 1 more confirmed loss decides
    assert data["verdict"] == "needs-labels" and data["needs_labels"]["cards"] == 5
    assert data["needs_labels"]["sitting"] == 1
    # the golden set changed since the baseline was scored (q0's gold holds new0 now): its stored
    # ranking is rescored with the current labels (recall@3 of q0: 1/2, not 1)
    assert data["rescored_cases"] == 1
    assert "needs labels: 5 cards in 5 cases decide the verdict" in out
    code, out, _ = cli(capsys, "label", "top-up", "--results", "pr.json", "--baseline", "baseline.json",
                       "--kb", "kb.jsonl", "--cases", "cases.jsonl", "--out", "sitting2")
    assert code == 0 and "cards to label: 1 in 1 of 10 cases" in out
    assert label(capsys, "sitting2", relevant=set()) == [("q5", "new5")]
    score(capsys, "pr")
    code, out, data = compared(capsys, "pr")
    # 5 confirmed losses, nothing gained: fail whatever q6 … q9's cards are (p = 1/32 at best)
    assert code == 1 and data["verdict"] == "fail" and "needs_labels" not in data and "verdict: FAIL" in out


def test_the_printed_top_up_runs_beside_a_config_file_when_compare_had_no_suite_flag(
        suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a retrieval-gate.yml in the folder: compare without --suite reads the results' suite ("default");
    # the command it prints must not name an empty suite (`--suite ''` is no suite of the config)
    (suite / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb.jsonl\n    cases: cases.jsonl\n",
                                              encoding="utf-8")
    score(capsys, "base")
    assert cli(capsys, "baseline", "update", "--results", "base.json", "--baseline", "baseline.json")[0] == 0
    score(capsys, "pr")
    code, out, data = compared(capsys, "pr")
    assert code == 1 and data["verdict"] == "needs-labels"
    printed = out.split("label them: ", 1)[1].splitlines()[0]
    assert "--suite" not in printed
    code, out, err = cli(capsys, *shlex.split(printed)[1:])
    assert code == 0, err
    assert "cards to label: 5 in 5 of 10 cases" in out


def test_the_printed_top_up_keeps_the_judgements_compare_was_told(suite: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # runs scored without saying how the set was judged (no sidecar: complete); compare is told
    # --judgements pooled: the top-up it prints reads the set the same way, so it writes the sitting
    # instead of "nothing to label: the golden set is judged complete"
    for name in ("base", "pr"):
        code, _, err = cli(capsys, "score", "--run", f"{name}.jsonl", "--cases", "cases.jsonl", "--kb", "kb.jsonl",
                           "--k", "1,3", "--headline-k", "1", "--out", f"{name}.json")
        assert code == 0, err
        if name == "base":
            assert cli(capsys, "baseline", "update", "--results", "base.json", "--baseline", "baseline.json")[0] == 0
    code, out, _ = cli(capsys, "compare", "--results", "pr.json", "--baseline", "baseline.json",
                       "--fail-on-regression", "--judgements", "pooled", "--out", "pr.cmp.json")
    assert code == 1 and json.loads(Path("pr.cmp.json").read_text(encoding="utf-8"))["verdict"] == "needs-labels"
    printed = out.split("label them: ", 1)[1].splitlines()[0]
    assert "--judgements pooled" in printed
    code, out, err = cli(capsys, *shlex.split(printed)[1:])
    assert code == 0, err
    assert "cards to label: 5 in 5 of 10 cases" in out
    # and the same flag on top-up alone: complete says nothing to label
    code, out, _ = cli(capsys, "label", "top-up", "--results", "pr.json", "--baseline", "baseline.json",
                       "--kb", "kb.jsonl", "--cases", "cases.jsonl", "--out", "other", "--judgements", "complete")
    assert code == 0 and "nothing to label: the golden set is judged complete" in out
    code, _, err = cli(capsys, "label", "top-up", "--results", "pr.json", "--baseline", "baseline.json",
                       "--kb", "kb.jsonl", "--cases", "cases.jsonl", "--out", "other", "--judgements", "pool")
    assert code == 2 and "--judgements 'pool'" in err
