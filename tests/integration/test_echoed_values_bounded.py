"""A value the tool echoes back in a message is bounded (docs/formats.md, "Input limits"): cut to
about 80 characters by the message itself, and whatever message prints it, never kept past 160 by
the guard on every printed line — a 1 MB gold id, a 1 MB retriever name, a 1 MB k. Every line
printed stays short, and says how long the value was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.load.boundary import bound_echoes
from tests.helpers import run_cli

BIG = "x" * 1_000_000


def _kb(root: Path) -> None:
    (root / "kb").mkdir()
    (root / "kb" / "a.md").write_text("# A\n\ntext a\n", encoding="utf-8")


def _lines_are_short(text: str) -> None:
    assert text and max(len(line) for line in text.splitlines()) < 600, max(map(len, text.splitlines()))


@pytest.mark.parametrize("strict", [False, True])
def test_a_1_mb_gold_id_is_echoed_cut_in_the_finding_and_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   strict: bool) -> None:
    _kb(tmp_path)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "query": "q", "gold": [BIG]}) + "\n",
                                          encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["validate", "--kb", "kb", "--cases", "cases.jsonl", *(["--strict"] if strict else [])],
                             capsys)
    assert code == (2 if strict else 0)
    _lines_are_short(out + err)
    assert "'" + "x" * 160 + "…' (1,000,000 characters)" in out + err


@pytest.mark.parametrize(("field", "value"), [("retriever", BIG), ("k", f"[{BIG}]")])
def test_a_1_mb_config_value_is_echoed_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str], field: str, value: str) -> None:
    _kb(tmp_path)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "query": "q", "gold": ["a"]}\n', encoding="utf-8")
    (tmp_path / "retrieval-gate.yml").write_text(
        f"suites:\n  default:\n    kb: kb\n    cases: cases.jsonl\n    {field}: {value}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["validate"], capsys)
    assert code == 2 and "retrieval-gate.yml:5" in err
    _lines_are_short(out + err)
    assert "(1,000,000 characters)" in err


def test_bound_echoes_cuts_only_long_values_and_leaves_prose_whole() -> None:
    short = "error: a.jsonl:3: case 'c1': the card's gold id 'g' is not a card"
    assert bound_echoes(short) == short
    prose = "the card's text, " * 40 + "and 'g'"  # an apostrophe opens no quoted value
    assert bound_echoes(prose) == prose
    reason = "'python:/tmp/a/b/down.py:search' failed: ConnectionError: collection docs_v2 not found" + "." * 70
    assert bound_echoes(f"e.g. {reason!r}") == f"e.g. {reason!r}"  # 160 characters, what a reason may quote
    assert bound_echoes(f"id {'it' + chr(39) + 's ' + 'q' * 300!r} bad") == (
        'id "it\'s ' + "q" * 155 + '…" (305 characters) bad')  # 160 kept: "it's " and 155 q
    assert bound_echoes("path " + "p" * 400) == "path " + "p" * 160 + "… (400 characters)"
