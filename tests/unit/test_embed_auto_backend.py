"""``embed_backend: auto`` (the default) decides by files only: the checked fp32 export in the
export folder → ``onnx``; an export that failed its check, another device or no export folder →
``torch``; no export yet → ``onnx`` where the export's packages are installed, else ``torch``.
And a switch between the two fp32 backends is no settings change; int8 or a device is."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from retrieval_gate.baseline.fingerprint import config_changes, same_vectors, settings_changes
from retrieval_gate.baseline.model import ConfigChange
from retrieval_gate.compare.changes import retrieval_config_changed
from retrieval_gate.embed import backends
from retrieval_gate.embed.backends import resolve_backend
from retrieval_gate.embed.onnx import FP32_FILE, REJECTED_FILE, VERIFIED_FILE
from retrieval_gate.embed.resolve import ModelRef
from retrieval_gate.embed.settings import EmbedSettings
from retrieval_gate.settings import SuiteConfig

SHA = "a" * 64


def _ref(tmp_path: Path) -> ModelRef:
    return ModelRef(name="m", path=tmp_path / "model", source="local", sha256=SHA)


def _export(root: Path, *names: str) -> None:
    folder = root / SHA
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_text("{}", encoding="utf-8")


def test_auto_is_the_default_backend() -> None:
    assert EmbedSettings().backend == "auto"
    assert SuiteConfig().embed_backend == "auto"


def test_auto_takes_the_checked_export(tmp_path: Path) -> None:
    _export(tmp_path / "onnx", FP32_FILE, VERIFIED_FILE)
    settings = EmbedSettings(export_root=tmp_path / "onnx")
    assert resolve_backend(_ref(tmp_path), settings=settings) == "onnx"


def test_auto_runs_torch_when_the_export_failed_its_check(tmp_path: Path) -> None:
    _export(tmp_path / "onnx", FP32_FILE, VERIFIED_FILE, REJECTED_FILE)
    assert resolve_backend(_ref(tmp_path), settings=EmbedSettings(export_root=tmp_path / "onnx")) == "torch"


def test_an_unchecked_export_file_alone_is_not_taken_for_a_checked_one(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _export(tmp_path / "onnx", FP32_FILE)
    monkeypatch.setattr(backends, "_can_export", lambda: False)
    assert resolve_backend(_ref(tmp_path), settings=EmbedSettings(export_root=tmp_path / "onnx")) == "torch"


@pytest.mark.parametrize(("can_export", "expected"), [(True, "onnx"), (False, "torch")])
def test_without_an_export_auto_exports_where_it_can(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     can_export: bool, expected: str) -> None:
    monkeypatch.setattr(backends, "_can_export", lambda: can_export)
    assert resolve_backend(_ref(tmp_path), settings=EmbedSettings(export_root=tmp_path / "onnx")) == expected


def test_auto_on_another_device_or_without_an_export_folder_is_torch(tmp_path: Path) -> None:
    _export(tmp_path / "onnx", FP32_FILE, VERIFIED_FILE)
    assert resolve_backend(_ref(tmp_path), settings=EmbedSettings(device="cuda", export_root=tmp_path / "onnx")) \
        == "torch"
    assert resolve_backend(_ref(tmp_path), settings=EmbedSettings()) == "torch"


@pytest.mark.parametrize("backend", ["torch", "onnx", "onnx-int8"])
def test_a_named_backend_is_taken_as_named(tmp_path: Path, backend: str) -> None:
    _export(tmp_path / "onnx", FP32_FILE, REJECTED_FILE)
    assert resolve_backend(_ref(tmp_path), settings=EmbedSettings(backend=backend, export_root=tmp_path)) == backend


def test_the_export_packages_are_looked_up_not_imported(tmp_path: Path) -> None:
    before = {name for name in ("torch", "onnx", "onnxruntime") if name in sys.modules}
    backends._can_export()
    assert {name for name in ("torch", "onnx", "onnxruntime") if name in sys.modules} == before


@pytest.mark.parametrize(("old", "new", "same"), [
    (SHA, SHA + "+onnx", True),
    (SHA + "+onnx", SHA, True),
    (SHA, SHA + "+onnx-int8", False),
    (SHA + "+onnx", SHA + "+onnx-int8", False),
    (SHA, SHA + "+cuda", False),
    (SHA, "b" * 64 + "+onnx", False),
    (None, SHA + "+onnx", False),
])
def test_only_a_switch_between_the_fp32_backends_of_the_same_files_is_the_same_vectors(
        old: str | None, new: str, same: bool) -> None:
    change = ConfigChange(key="config.model_sha256", baseline=old, current=new)
    assert same_vectors(change) is same
    assert (settings_changes([change]) == []) is same
    assert retrieval_config_changed([change]) is not same


def test_a_torch_baseline_against_an_onnx_run_lists_the_hash_but_raises_no_settings_change() -> None:
    old = {"config": {"model": "m", "model_sha256": SHA, "retriever": "dense"}, "k": [5]}
    new = json.loads(json.dumps(old))
    new["config"]["model_sha256"] = SHA + "+onnx"
    changes = config_changes(baseline=old, current=new)
    assert [c.key for c in changes] == ["config.model_sha256"]  # the configuration table says which backend
    assert settings_changes(changes) == []
    new["config"]["retriever"] = "hybrid"
    assert [c.key for c in settings_changes(config_changes(baseline=old, current=new))] == ["config.retriever"]
