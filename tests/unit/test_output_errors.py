"""An output the tool cannot write is an ``OutputError`` — not bad input — and still exits 2 with
one ``error: PATH: cannot write: …`` line, leaving the inputs and any old file untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.errors import InputError, OutputError
from retrieval_gate.files import folder_lock, write_json_atomic, write_text_atomic

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_path_under_a_file_is_an_output_error_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file\n", encoding="utf-8")
    target = tmp_path / "taken" / "out.json"
    with pytest.raises(OutputError, match=r"taken/out\.json: cannot write: (File exists|Not a directory)") as caught:
        write_json_atomic(target, data={"a": 1})
    assert not isinstance(caught.value, InputError)
    assert [p.line for p in caught.value.problems] == [None]
    assert (tmp_path / "taken").read_text(encoding="utf-8") == "a file\n"


def test_a_folder_that_cannot_be_made_cannot_be_locked(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("", encoding="utf-8")
    with pytest.raises(OutputError, match="cannot lock the folder"), folder_lock(tmp_path / "taken" / "sub"):
        pass


def test_writing_onto_a_folder_is_an_output_error_and_the_folder_stays(tmp_path: Path) -> None:
    (tmp_path / "out.jsonl").mkdir()
    with pytest.raises(OutputError, match="cannot write"):
        write_text_atomic(tmp_path / "out.jsonl", text="x\n")
    assert (tmp_path / "out.jsonl").is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_the_cli_exits_2_with_one_cannot_write_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "taken").write_text("", encoding="utf-8")
    out = tmp_path / "taken" / "pr-cases.jsonl"
    with pytest.raises(SystemExit) as exited:
        main(["subset", "--cases", str(EXAMPLES / "cases.jsonl"), "--per-cell", "1", "--out", str(out)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {out}" in err and ": cannot write: " in err and "Traceback" not in err
