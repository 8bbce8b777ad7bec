"""User mistakes that used to end as "internal error … please report this bug" (exit 3) are exit 2
with one line naming the input: a Markdown KB file whose name is not UTF-8 (a fork can commit one),
a 5,000-digit integer in retrieval-gate.yml."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import run_cli


@pytest.fixture
def non_utf8_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "refunds.md").write_text("# Refunds\n\nFive to ten days.\n", encoding="utf-8")
    name = os.fsencode(tmp_path / "kb") + b"/caf\xe9.md"  # Latin-1 é: not UTF-8
    with open(name, "wb") as handle:
        handle.write(b"# Cafe\n\nOpening hours.\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "q1", "query": "refund?", "gold": ["refunds"]}) + "\n",
                                          encoding="utf-8")
    return tmp_path


def _one_error(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "internal error" not in err, err
    return errors[0]


@pytest.mark.parametrize("command", [["validate"], ["eval", "--retriever", "bm25", "--out", "r.json"]])
def test_a_kb_file_name_that_is_not_utf8_is_exit_2_naming_the_file(non_utf8_kb: Path, capsys, command) -> None:
    code, _, err = run_cli([*command, "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 2
    line = _one_error(err)
    assert "kb/caf\\udce9.md" in line and "not valid UTF-8" in line  # the byte shown, never raw
    assert not (non_utf8_kb / "r.json").exists()


def test_a_five_thousand_digit_integer_in_the_config_is_exit_2_with_its_line(tmp_path: Path, monkeypatch,
                                                                            capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "retrieval-gate.yml").write_text("suites:\n  default:\n    k: [1, " + "9" * 5000 + "]\n",
                                                 encoding="utf-8")
    code, _, err = run_cli(["validate"], capsys)
    assert code == 2
    line = _one_error(err)
    assert "retrieval-gate.yml:3" in line and "integer of 5,000 characters" in line
