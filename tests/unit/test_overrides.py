"""The one override model (``overrides.SuiteOverrides``): its keys are the config file's, in the
file's nested shape; it carries values and the owning models check them, once."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from retrieval_gate.audit.params import AuditParams
from retrieval_gate.chunk.chunking import ChunkSettings
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.errors import InputError
from retrieval_gate.overrides import (
    AuditOverrides,
    ChunkOverrides,
    GateOverrides,
    StoreOverrides,
    SuiteOverrides,
    flag_keys,
)
from retrieval_gate.settings import ConfigFile, SuiteConfig, override_suite, parse_config, resolve_suite
from retrieval_gate.store.settings import StoreSettings
from retrieval_gate.sweep.plan import Override


@pytest.mark.parametrize(("override", "owner"), [(ChunkOverrides, ChunkSettings), (StoreOverrides, StoreSettings),
                                                 (GateOverrides, GateSettings), (AuditOverrides, AuditParams)])
def test_each_block_override_has_exactly_its_owner_s_keys(override: type[BaseModel], owner: type[BaseModel]) -> None:
    assert set(override.model_fields) == set(owner.model_fields)


def test_the_suite_override_has_every_suite_key_but_the_sweep_block() -> None:
    # A sweep block is the grid itself: nothing lays one over a suite.
    assert set(SuiteOverrides.model_fields) == set(SuiteConfig.model_fields) - {"sweep"}


def test_an_unknown_key_is_refused_when_the_override_is_built() -> None:
    with pytest.raises(ValidationError, match="chunk_size"):
        SuiteOverrides(chunk_size=300)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="sise"):
        ChunkOverrides(sise=300)  # type: ignore[call-arg]


def test_dotted_keys_read_as_the_nested_override() -> None:
    made = SuiteOverrides.from_dotted({"chunking.size": "300", "retriever": "bm25", "options.bm25_k1": 1.2},
                                      where="<sweep>")
    assert made == SuiteOverrides(chunking=ChunkOverrides(size=300), retriever="bm25", options={"bm25_k1": 1.2})
    with pytest.raises(InputError, match=r"<sweep>: chunking.sise: unknown key"):
        SuiteOverrides.from_dotted({"chunking.sise": 300}, where="<sweep>")


def test_not_given_is_none_and_an_empty_block_is_left_out() -> None:
    made = SuiteOverrides(kb="kb", store=StoreOverrides(), gate=GateOverrides(floors={}),
                          chunking=ChunkOverrides(size=90))
    assert made.given() == {"kb": "kb", "chunking": {"size": 90}}
    assert flag_keys(made.given()) == {"kb", "chunking.size"}
    assert flag_keys({"options": {"bm25_k1": 1.0}}) == {"options"}  # options: one value, validated by its model


def test_a_flag_lays_one_key_over_the_file_and_keeps_the_rest(tmp_path: Path) -> None:
    config = parse_config("suites:\n  s:\n    chunking: {size: 600, overlap: 60}\n    store: {exact: true}\n",
                          source=tmp_path / "rg.yml")
    suite = resolve_suite(config, suite="s", config_path=tmp_path / "rg.yml",
                          overrides=SuiteOverrides(chunking=ChunkOverrides(overlap=100),
                                                   store=StoreOverrides(hnsw_m=8)))
    assert (suite.chunking.size, suite.chunking.overlap, suite.store.exact, suite.store.hnsw_m) == (600, 100, True, 8)


def test_the_owner_checks_the_value_once_whoever_gives_it(tmp_path: Path) -> None:
    """The same rule, from a flag and from a sweep point: one message, from the owning model."""
    with pytest.raises(InputError) as flag:
        resolve_suite(ConfigFile(), suite="default", config_path=None,
                      overrides=SuiteOverrides(chunking=ChunkOverrides(size=100, overlap=100)))
    with pytest.raises(InputError) as point:
        override_suite(SuiteConfig(), SuiteOverrides.from_dotted({"chunking.size": 100, "chunking.overlap": 100},
                                                                  where="<sweep>"), where="<sweep>")
    rule = "chunking: chunk overlap (100) must be smaller than chunk size (100)"
    assert str(flag.value) == f"<flags>: {rule}" and str(point.value) == f"<sweep>: {rule}"


def test_a_sweep_point_is_the_override_model_and_keeps_the_export_folder(tmp_path: Path) -> None:
    base = resolve_suite(ConfigFile(), suite="default", config_path=None, embed_exports=tmp_path / "onnx")
    point = Override(values={"chunking.size": 300, "overfetch": 5})
    assert point.overrides == SuiteOverrides(chunking=ChunkOverrides(size=300), overfetch=5)
    made = point.apply(base)
    assert (made.chunking.size, made.overfetch, made.embed.export_root) == (300, 5, tmp_path / "onnx")


def test_a_config_error_names_the_key_s_line_or_the_nearest_written_one(tmp_path: Path) -> None:
    text = ("suites:\n"
            "  base: &shared\n"
            "    overfetch: 5000\n"
            "  default:\n"
            "    <<: *shared\n"
            "    chunking:\n"
            "      size: 300\n"
            "      overlap: 300\n")
    with pytest.raises(InputError) as err:
        parse_config(text, source=tmp_path / "rg.yml")
    lines = sorted(str(p) for p in err.value.problems)
    assert lines == sorted([
        f"{tmp_path / 'rg.yml'}:3: suites.base.overfetch: Input should be less than or equal to 1000",
        # reached through the merge key: no line of its own, so the suite's
        f"{tmp_path / 'rg.yml'}:4: suites.default.overfetch: Input should be less than or equal to 1000",
        f"{tmp_path / 'rg.yml'}:6: suites.default.chunking: chunk overlap (300) must be smaller than chunk size (300)",
    ])
