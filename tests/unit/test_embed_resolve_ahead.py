"""``embed.resolve.ResolveAhead``: the model's files hashed on a second thread give the same
``ModelRef`` as ``resolve_model``, and its error is raised where the caller asks for the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.embed.resolve import ResolveAhead, resolve_ahead, resolve_model
from retrieval_gate.errors import EmbedderError
from retrieval_gate.files import sha256_path


def model_folder(root: Path) -> Path:
    folder = root / "tiny-model"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 4}')
    (folder / "modules.json").write_text("[]")
    (folder / "weights.bin").write_bytes(bytes(range(256)) * 4096)
    return folder


def test_the_hash_made_ahead_is_the_one_resolve_model_makes(tmp_path: Path) -> None:
    folder = model_folder(tmp_path)
    ahead = resolve_ahead(str(folder))
    assert isinstance(ahead, ResolveAhead)
    ref = ahead.result()
    assert ref == resolve_model(str(folder))
    assert ref.sha256 == sha256_path(folder) and ref.source == "local"


def test_a_folder_that_is_no_model_raises_at_result_not_at_start(tmp_path: Path) -> None:
    (tmp_path / "not-a-model").mkdir()
    ahead = resolve_ahead(str(tmp_path / "not-a-model"))
    assert ahead is not None  # started: the error waits for the caller
    with pytest.raises(EmbedderError, match="not a sentence-transformers model folder"):
        ahead.result()


def test_a_hub_name_is_not_resolved_ahead() -> None:
    assert resolve_ahead("some-org/some-model-that-is-not-here") is None
