"""``sweep --apply``: the winner written into the suite's block, every other line kept."""

from __future__ import annotations

from pathlib import Path

import yaml

from retrieval_gate.cli.sweep import apply_winner
from retrieval_gate.settings import load_config, resolve_suite
from retrieval_gate.sweep.apply import edit_config

CONFIG = """\
# our suites
suites:
  default:
    kb: kb            # the help centre
    cases: cases.jsonl
    chunking:
      size: 1200      # characters
    audit:
      coverage: [kind]
  other:
    kb: kb
"""


def test_an_existing_value_is_replaced_keeping_its_comment():
    out = edit_config(CONFIG, suite="default", settings={"chunking.size": 600})
    assert out is not None
    assert "      size: 600 # characters" in out
    assert out.replace("      size: 600 # characters", "      size: 1200      # characters") == CONFIG


def test_a_missing_key_and_a_missing_block_are_added_in_the_suite():
    out = edit_config(CONFIG, suite="default", settings={"chunking.overlap": 0, "store.exact": True,
                                                        "retriever": "bm25"})
    assert out is not None
    data = yaml.safe_load(out)
    assert data["suites"]["default"]["chunking"] == {"size": 1200, "overlap": 0}
    assert data["suites"]["default"]["store"] == {"exact": True}
    assert data["suites"]["default"]["retriever"] == "bm25"
    assert data["suites"]["other"] == {"kb": "kb"}  # another suite untouched
    assert "# the help centre" in out and out.startswith("# our suites\n")


def test_a_flow_mapping_is_not_edited():
    text = "suites:\n  default:\n    chunking: {size: 1200}\n"
    assert edit_config(text, suite="default", settings={"chunking.size": 600}) is None


def test_an_unknown_suite_is_not_edited():
    assert edit_config(CONFIG, suite="nope", settings={"chunking.size": 600}) is None


def test_apply_writes_the_winner_and_the_file_reads_back_with_it(tmp_path: Path, capsys):
    path = tmp_path / "retrieval-gate.yml"
    path.write_text(CONFIG, encoding="utf-8")
    config, config_path = load_config(path, required=True)
    base = resolve_suite(config, suite="default", config_path=config_path)
    apply_winner({"winner": {"chunking.size": 600, "chunking.overlap": 0}}, config_path=path, suite="default",
                 base=base)
    again = resolve_suite(load_config(path, required=True)[0], suite="default", config_path=path)
    assert (again.chunking.size, again.chunking.overlap) == (600, 0)
    assert again.audit == base.audit and again.kb == base.kb
    assert "+      size: 600" in capsys.readouterr().out  # the diff is shown


def test_apply_without_a_winner_leaves_the_file_alone(tmp_path: Path, capsys):
    path = tmp_path / "retrieval-gate.yml"
    path.write_text(CONFIG, encoding="utf-8")
    apply_winner({"winner": None}, config_path=path, suite="default", base=None)
    assert path.read_text() == CONFIG and "nothing to apply" in capsys.readouterr().out


def test_apply_prints_the_change_where_the_file_cannot_be_edited(tmp_path: Path, capsys):
    path = tmp_path / "retrieval-gate.yml"
    text = "suites:\n  default:\n    chunking: {size: 1200}\n"
    path.write_text(text, encoding="utf-8")
    config, config_path = load_config(path, required=True)
    base = resolve_suite(config, suite="default", config_path=config_path)
    apply_winner({"winner": {"chunking.size": 600}}, config_path=path, suite="default", base=base)
    assert path.read_text() == text
    assert "set chunking.size: 600" in capsys.readouterr().out


def test_apply_refuses_a_config_file_linked_out_of_the_repository(tmp_path: Path):
    import os

    import pytest

    from retrieval_gate.errors import OutputError

    repo, outside = tmp_path / "repo", tmp_path / "outside.yml"
    (repo / ".git").mkdir(parents=True)
    outside.write_text(CONFIG, encoding="utf-8")
    os.symlink(outside, repo / "retrieval-gate.yml")
    path = repo / "retrieval-gate.yml"
    base = resolve_suite(load_config(path, required=True)[0], suite="default", config_path=path)
    with pytest.raises(OutputError, match="outside the repository"):
        apply_winner({"winner": {"chunking.size": 600}}, config_path=path, suite="default", base=base)
    assert outside.read_text() == CONFIG
