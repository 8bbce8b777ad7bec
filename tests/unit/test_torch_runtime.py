"""Without torch (the action's default image), what needs it stops before any work with one
``NeedsTorchError`` line naming the full image variant: another model (no checked export), an
explicit ``embed_backend: torch``, an ONNX export, the cross-encoder rerank. With the checked
export, ``auto`` runs ONNX and needs no torch.

torch is made unimportable the way Python itself spells it: ``sys.modules["torch"] = None``
(``import torch`` raises ImportError and ``importlib.util.find_spec`` answers None)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from retrieval_gate.embed.backends import make_embedder
from retrieval_gate.embed.onnx import FP32_FILE, VERIFIED_FILE, OnnxEmbedder, ensure_exported
from retrieval_gate.embed.resolve import ModelRef, resolve_model
from retrieval_gate.embed.runtime import torch_available
from retrieval_gate.embed.settings import EmbedSettings
from retrieval_gate.errors import EmbedderError, NeedsTorchError, RetrievalGateError
from retrieval_gate.retrieve.rerank import load_cross_encoder

SHA = "b" * 64


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)


def _ref(tmp_path: Path) -> ModelRef:
    return ModelRef(name="org/other-model", path=tmp_path / "model", source="local", sha256=SHA)


def _assert_names_the_full_image(exc: NeedsTorchError) -> None:
    text = str(exc)
    assert "\n" not in text
    assert "full image variant" in text and "scripts/build-image --full" in text
    assert isinstance(exc, EmbedderError) and isinstance(exc, RetrievalGateError) and exc.exit_code == 2


def test_torch_is_seen_here_and_not_once_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    assert torch_available()
    monkeypatch.setitem(sys.modules, "torch", None)
    assert not torch_available()


@pytest.mark.usefixtures("no_torch")
def test_a_model_without_a_checked_export_names_the_full_image(tmp_path: Path) -> None:
    settings = EmbedSettings(export_root=tmp_path / "onnx")
    with pytest.raises(NeedsTorchError) as caught:
        make_embedder(_ref(tmp_path), settings=settings)
    _assert_names_the_full_image(caught.value)
    assert "'org/other-model'" in str(caught.value) and "no checked ONNX export" in str(caught.value)


@pytest.mark.usefixtures("no_torch")
def test_embed_backend_torch_names_the_full_image(tmp_path: Path) -> None:
    settings = EmbedSettings(export_root=tmp_path / "onnx", backend="torch")
    with pytest.raises(NeedsTorchError) as caught:
        make_embedder(_ref(tmp_path), settings=settings)
    _assert_names_the_full_image(caught.value)
    assert "embed_backend torch" in str(caught.value)


@pytest.mark.usefixtures("no_torch")
def test_the_checked_export_runs_without_torch(tmp_path: Path) -> None:
    folder = tmp_path / "onnx" / SHA
    folder.mkdir(parents=True)
    for name in (FP32_FILE, VERIFIED_FILE):
        (folder / name).write_text("{}", encoding="utf-8")
    embedder = make_embedder(_ref(tmp_path), settings=EmbedSettings(export_root=tmp_path / "onnx"))
    assert isinstance(embedder, OnnxEmbedder)


@pytest.mark.usefixtures("no_torch")
def test_an_export_to_make_names_the_full_image(tmp_path: Path) -> None:
    with pytest.raises(NeedsTorchError) as caught:
        ensure_exported(_ref(tmp_path), folder=tmp_path / "onnx" / SHA, quantized=False)
    _assert_names_the_full_image(caught.value)
    assert not (tmp_path / "onnx" / SHA / FP32_FILE).exists()


@pytest.mark.usefixtures("no_torch")
def test_the_cross_encoder_rerank_names_the_full_image() -> None:
    with pytest.raises(NeedsTorchError) as caught:
        load_cross_encoder("cross-encoder/ms-marco-MiniLM-L6-v2")
    _assert_names_the_full_image(caught.value)
    assert "cross-encoder rerank" in str(caught.value)


@pytest.mark.usefixtures("no_torch")
def test_a_hub_model_names_the_full_image_instead_of_looking_for_it() -> None:
    with pytest.raises(NeedsTorchError) as caught:
        resolve_model("sentence-transformers/paraphrase-MiniLM-L3-v2-not-cached")
    _assert_names_the_full_image(caught.value)


@pytest.mark.usefixtures("no_torch")
def test_the_bundled_model_resolves_without_torch() -> None:
    assert resolve_model("all-MiniLM-L6-v2").source == "bundled"


def test_the_suites_export_folder_survives_being_another_models_field(tmp_path: Path) -> None:
    # pydantic runs SuiteConfig's after-validator again, without a context, on an instance given as a
    # field of another model (the action's ActionSettings.suite_config): the export folder the entry
    # point handed in must survive it, or the action's auto backend never finds the image's export.
    from pydantic import BaseModel, ConfigDict

    from retrieval_gate.settings import ConfigFile, SuiteConfig, resolve_suite

    class Holder(BaseModel):
        model_config = ConfigDict(frozen=True)
        suite_config: SuiteConfig

    suite = resolve_suite(ConfigFile(), suite="default", config_path=None, env={}, embed_exports=tmp_path / "onnx")
    held = Holder(suite_config=suite)
    assert held.suite_config.embed.export_root == tmp_path / "onnx"
    assert SuiteConfig().embed.export_root is None
