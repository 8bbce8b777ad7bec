"""The CLI prints the hostile corpus (case ids, card ids, titles, queries, file names, config keys)
as text: no line the runner would take for a workflow command, no control character a terminal
would obey — in ``validate``, ``score``, ``compare``, ``report --format terminal`` and the errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run_cli
from tests.hostile_text import CORPUS, assert_no_command_from_text

N = len(CORPUS)


def _dataset(folder: Path) -> None:
    cases = [{"id": f"q{i}{text}", "query": f"question {text}?", "gold": [f"card{i}{text}"]}
             for i, text in enumerate(CORPUS)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    kb = [{"id": f"card{i}{text}", "title": f"title {text}", "text": f"text of card {i}"}
          for i, text in enumerate(CORPUS)]
    (folder / "kb.jsonl").write_text("".join(json.dumps(c) + "\n" for c in kb), encoding="utf-8")
    for name, lost in (("base", 0), ("worse", N)):
        lines = []
        for i, case in enumerate(cases):
            other = [f"card{(i + 1) % N}{CORPUS[(i + 1) % N]}"]
            ranked = other if i < lost else [case["gold"][0], *other]
            lines.append(json.dumps({"id": case["id"], "retrieved": ranked}))
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_every_command_prints_hostile_ids_and_titles_as_text(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _dataset(tmp_path)
    printed = []
    code, out, err = run_cli(["validate", "--cases", "cases.jsonl", "--kb", "kb.jsonl"], capsys)
    assert code == 0, err
    printed += [out, err]
    for name in ("base", "worse"):
        code, out, err = run_cli(["score", "--run", f"{name}.jsonl", "--cases", "cases.jsonl", "--k", "1,5",
                                  "--out", f"{name}.results.json"], capsys)
        assert code == 0, err
        printed += [out, err]
    code, out, err = run_cli(["baseline", "update", "--results", "base.results.json", "--baseline", "b.json",
                              "--sha", "abc1234", "--ref", "main"], capsys)
    assert code == 0, err
    code, out, err = run_cli(["compare", "--results", "worse.results.json", "--baseline", "b.json", "--all",
                              "--out", "comparison.json"], capsys)
    assert code == 0, err
    assert "INJECTED-CARD-ID" in out  # the ids are shown, as text
    assert "[link=https://evil.example]click[/link]" in out  # and rich markup in them is text too
    printed += [out, err]
    code, out, err = run_cli(["report", "--results", "worse.results.json", "--comparison", "comparison.json",
                              "--format", "terminal"], capsys)
    assert code == 0, err
    printed += [out, err]
    hostile_out = f"report{CORPUS[0]}{CORPUS[-4]}.txt"  # a path is printed too ("wrote …")
    code, out, err = run_cli(["report", "--results", "worse.results.json", "--comparison", "comparison.json",
                              "--format", "terminal", "--out", hostile_out], capsys)
    assert code == 0, err
    printed += [out, err, (tmp_path / hostile_out).read_text(encoding="utf-8")]
    code, out, err = run_cli(["audit", "--kb", "kb.jsonl", "--cases", "cases.jsonl", "--results", "worse.results.json",
                              "--out", "audit.json", "--html", "audit.html"], capsys)
    assert code == 0, err
    assert "[link=" in out  # markup shown as text (the table folds it over lines)
    printed += [out, err]
    assert "\u202e" not in (tmp_path / "audit.html").read_text(encoding="utf-8")
    assert_no_command_from_text(*printed)
    code, _, err = run_cli(["report", "--results", "worse.results.json", "--comparison", "comparison.json",
                            "--format", "html", "--out", "report.html"], capsys)
    assert code == 0, err
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "\u202e" not in html and "\\u202eevil" in html  # the override shown, never obeyed


def test_a_kb_file_name_carrying_a_command_is_named_as_text(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "good.md").write_text("# Good\n\ntext\n", encoding="utf-8")
    (kb / "bad\n::error file=README.md,line=1::X\n.md").write_text("", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "q1", "query": "q?", "gold": ["good"]}) + "\n",
                                          encoding="utf-8")
    code, out, err = run_cli(["validate", "--cases", "cases.jsonl", "--kb", "kb"], capsys)
    assert code == 2
    assert_no_command_from_text(out, err)
    (line,) = [ln for ln in err.splitlines() if "card has no text" in ln]  # one line, naming the file
    assert "bad\\x0a::error file=README.md,line=1::X\\x0a.md" in line


def test_a_usage_error_quoting_a_hostile_argument_prints_it_as_text(capsys):
    for args in (["\n::error file=a.py,line=1::X"], ["compare", "--bogus\x1b[2J\n::add-mask::x"]):
        code, out, err = run_cli(args, capsys)
        assert code == 2
        assert_no_command_from_text(out, err)
