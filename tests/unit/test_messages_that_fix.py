"""Messages that name the fix: an unknown config key says the nearest known one (difflib over the
keys beside it, and the keys one block down written flat); the truncation line says the chunking
that fits the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.evaluation.chunks import truncation_line
from retrieval_gate.overrides import key_suggestion
from retrieval_gate.settings import ConfigFile, SuiteConfig, load_config


@pytest.mark.parametrize(("parts", "hint"), [
    (("suites", "default", "chunk_size"), "did you mean `chunking: {size: …}`?"),
    (("suites", "default", "chunking_overlap"), "did you mean `chunking: {overlap: …}`?"),
    (("suites", "default", "modle"), "did you mean `model`?"),
    (("suites", "default", "chunking", "sise"), "did you mean `size`?"),
    (("suites", "default", "zzz"), None),
    (("sutes",), "did you mean `suites`?"),
])
def test_an_unknown_key_names_the_nearest_known_one(parts: tuple[str, ...], hint: str | None) -> None:
    assert key_suggestion(ConfigFile, parts) == hint


def test_a_suite_key_alone_is_looked_up_in_the_suite() -> None:
    assert key_suggestion(SuiteConfig, ("retriver",)) == "did you mean `retriever`?"


def test_the_config_file_error_carries_the_hint_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "retrieval-gate.yml"
    path.write_text("suites:\n  default:\n    k: [5]\n    chunk_size: 300\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_config(path)
    assert str(caught.value).endswith(
        "retrieval-gate.yml:4: suites.default.chunk_size: unknown key: did you mean `chunking: {size: …}`?")


def test_the_truncation_line_names_the_chunking_that_fits_the_model() -> None:
    extras = {"chunks": 125, "of": 520, "limit": 256, "longest": 611, "pieces_cut": 4211}
    assert truncation_line(extras) == (
        "125 of 520 chunks exceed the model's 256 word pieces (longest 611): 4211 word pieces never embedded; "
        "to embed every word: `chunking: {unit: tokens, size: 254}`")
    assert truncation_line({**extras, "chunks": 0}) == "no chunk exceeds the model's 256 word pieces (longest 611)"
