"""``eval --option KEY=VALUE``: the value is read by the config file's YAML loader, so a flag and
the same key under ``options:`` mean the same value."""

from __future__ import annotations

import pytest

from retrieval_gate.cli.eval import parse_options
from retrieval_gate.errors import UsageError
from retrieval_gate.load.yamltext import safe_load


def test_option_values_are_yaml_scalars_and_lists() -> None:
    got = parse_options(["bm25_b=0.75", "rerank_top_n=3", "exact=true", "fields=[title, body]", "name=plain text",
                         "empty="])
    assert got == {"bm25_b": 0.75, "rerank_top_n": 3, "exact": True, "fields": ["title", "body"],
                   "name": "plain text", "empty": ""}


def test_a_value_that_is_not_yaml_stays_the_text_given() -> None:
    assert parse_options(["pattern=[unclosed", "key=a: b: c"]) == {"pattern": "[unclosed", "key": "a: b: c"}


def test_a_flag_reads_as_the_config_file_reads_the_same_value() -> None:
    for raw in ("0.75", "[1, 2]", "yes", "~", "'quoted'"):
        assert parse_options([f"k={raw}"]) == {"k": safe_load(f"k: {raw}", aliases=True)["k"]}


@pytest.mark.parametrize("item", ["novalue", "=1", " =1"])
def test_an_option_without_a_key_is_a_usage_error(item: str) -> None:
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_options([item])


def test_no_options_is_none() -> None:
    assert parse_options([]) is None


def test_version_prints_the_version_and_whether_the_build_carries_a_release_pin(capsys, monkeypatch):
    from retrieval_gate import __version__, release_pin
    from tests.helpers import run_cli

    code, out, _ = run_cli(["--version"], capsys)
    assert code == 0 and out == f"retrieval-gate {__version__} (not a release build: no release pin)\n"
    monkeypatch.setattr(release_pin, "ACTION_REF", "acme/retrieval-gate@" + "ab" * 20)
    monkeypatch.setattr(release_pin, "ACTION_VERSION", "v1.2.3")
    code, out, _ = run_cli(["--version"], capsys)
    assert out == f"retrieval-gate {__version__} (release v1.2.3 acme/retrieval-gate@{'ab' * 20})\n"
