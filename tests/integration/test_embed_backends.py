"""``--embed-backend torch|onnx|onnx-int8`` with the real bundled model: the
ONNX export's vectors against sentence-transformers', the int8 one within its measured bound, the
export made once (atomically) and reused, each backend in its own cache space, bad settings
refused with exit 2.

Bounds (measured: 304 SciFact abstracts plus these edge texts, and bench_embed_backends.py on
1,000 abstracts, docs/performance.md "Embedding backends"): fp32 ONNX differs from torch by ≤ 3.1e-7 per
component (cosine ≥ 0.9999999); int8 by ≤ 0.04 per component, cosine ≥ 0.974 (the lowest: the
empty text). The tests allow ~10× / a margin on those.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.cli import main
from retrieval_gate.embed.backends import make_embedder
from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.embed.onnx import FP32_FILE, INT8_FILE, VERIFIED_FILE, OnnxEmbedder, ensure_exported
from retrieval_gate.embed.resolve import ModelRef, resolve_model
from retrieval_gate.embed.sentence import SentenceTransformerEmbedder
from retrieval_gate.embed.settings import EmbedSettings
from retrieval_gate.errors import EmbedderError
from retrieval_gate.files import sha256_bytes

pytestmark = pytest.mark.model
pytest.importorskip("onnx", reason="the onnx extra (pip install 'retrieval-gate[onnx]') is not installed")

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TEXTS = [
    "How long does a card refund take to reach the customer?",
    "Reembolso de cartão: o cliente recebe o valor em cinco a dez dias úteis.",
    "  leading and trailing spaces  ",
    "",
    "UPPER CASE AND punctuation!!! — naïve café, 123 456",
    "long " * 400,  # past max_seq_length (256 tokens): truncated the same way
]


@pytest.fixture(scope="module")
def ref() -> ModelRef:
    return resolve_model("all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def export_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="module")
def torch_vectors(ref: ModelRef) -> np.ndarray:
    return SentenceTransformerEmbedder(ref).embed_documents(TEXTS)


@pytest.mark.parametrize(("backend", "max_abs", "min_cos"), [
    ("onnx", 3e-6, 0.99999),
    ("onnx-int8", 0.1, 0.95),
])
def test_onnx_vectors_stay_within_the_measured_bound_of_torchs(ref: ModelRef, export_root: Path,
                                                              torch_vectors: np.ndarray, backend: str,
                                                              max_abs: float, min_cos: float) -> None:
    got = OnnxEmbedder(ref, backend=backend, export_root=export_root).embed_documents(TEXTS)
    assert got.shape == torch_vectors.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert float(np.abs(got - torch_vectors).max()) <= max_abs
    assert float((got * torch_vectors).sum(axis=1).min()) >= min_cos


def test_int8_really_is_another_model_than_fp32(ref: ModelRef, export_root: Path) -> None:
    fp32 = OnnxEmbedder(ref, backend="onnx", export_root=export_root).embed_documents(TEXTS)
    int8 = OnnxEmbedder(ref, backend="onnx-int8", export_root=export_root).embed_documents(TEXTS)
    assert float(np.abs(fp32 - int8).max()) > 1e-3  # quantized weights move the vectors measurably
    folder = export_root / ref.sha256
    assert (folder / INT8_FILE).stat().st_size < (folder / FP32_FILE).stat().st_size / 3


def test_queries_and_documents_embed_alike_for_a_model_without_prompts(ref: ModelRef, export_root: Path) -> None:
    emb = OnnxEmbedder(ref, backend="onnx", export_root=export_root)
    np.testing.assert_array_equal(emb.embed_queries(TEXTS[:2]), emb.embed_documents(TEXTS[:2]))


def test_the_export_is_made_once_and_reused(ref: ModelRef, tmp_path: Path) -> None:
    first = OnnxEmbedder(ref, backend="onnx-int8", export_root=tmp_path)
    first.embed_documents(TEXTS[:1])
    folder = tmp_path / ref.sha256
    assert sorted(p.name for p in folder.iterdir()) == [INT8_FILE, FP32_FILE, VERIFIED_FILE]  # no temporary file
    stamps = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}
    second = OnnxEmbedder(ref, backend="onnx-int8", export_root=tmp_path)
    np.testing.assert_array_equal(second.embed_documents(TEXTS[:1]), first.embed_documents(TEXTS[:1]))
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()} == stamps


def test_a_failed_export_leaves_no_file_a_later_run_would_take_for_a_model(ref: ModelRef, tmp_path: Path) -> None:
    broken = tmp_path / "broken-model"
    shutil.copytree(ref.path, broken, ignore=shutil.ignore_patterns("model.safetensors"))
    (broken / "model.safetensors").write_bytes(b"not safetensors")
    bad = ModelRef(name="broken", path=broken, source="local", sha256="b" * 64)
    with pytest.raises(EmbedderError, match="could not be exported to ONNX"):
        ensure_exported(bad, folder=tmp_path / "exports" / bad.sha256, quantized=True)
    assert list((tmp_path / "exports" / bad.sha256).iterdir()) == []


def test_each_backend_has_its_own_cache_space_and_never_gets_anothers_vectors(ref: ModelRef, export_root: Path,
                                                                               tmp_path: Path) -> None:
    embedders = {b: make_embedder(ref, settings=EmbedSettings(backend=b, batch_size=8, export_root=export_root))
                 for b in ("torch", "onnx", "onnx-int8")}
    ids = {b: e.identity().sha256 for b, e in embedders.items()}
    assert ids == {"torch": ref.sha256, "onnx": ref.sha256 + "+onnx", "onnx-int8": ref.sha256 + "+onnx-int8"}
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")
    planted = np.zeros(384, dtype=np.float32)
    planted[0] = 1.0  # a "torch" vector no model would make for this text
    torch_cached = CachedEmbedder(embedders["torch"], cache)
    key = sha256_bytes(TEXTS[0].encode("utf-8"))
    cache.put_many(torch_cached.space("document"), [(key, planted)])
    np.testing.assert_array_equal(torch_cached.embed_documents([TEXTS[0]])[0], planted)  # served from the cache
    assert not embedders["torch"].loaded
    for backend in ("onnx", "onnx-int8"):
        cached = CachedEmbedder(embedders[backend], cache)
        got = cached.embed_documents([TEXTS[0]])[0]
        assert cached.stats.documents_embedded == 1
        assert float(got @ planted) < 0.5
    assert cache.count() == 3
    cache.close()


@pytest.mark.parametrize(("flags", "message"), [
    (["--embed-backend", "tensorrt"], "embed_backend: Input should be 'auto', 'torch', 'onnx' or 'onnx-int8'"),
    (["--embed-backend", "onnx", "--device", "cuda"], "<flags>: embed_backend: onnx runs on the CPU"),
])
def test_a_bad_backend_setting_is_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      flags: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["eval", "--kb", str(EXAMPLES / "kb"), "--cases", str(EXAMPLES / "cases.jsonl"), "--ephemeral",
              *flags, "--out", str(tmp_path / "r.json")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "r.json").exists()


def test_without_the_onnx_package_the_error_names_the_extra(tmp_path: Path) -> None:
    # A real process in which `import onnx` fails (sys.modules entry None), as without the extra.
    code = ("import sys; sys.modules['onnx'] = None; from retrieval_gate.cli import main; "
            f"main(['embed', '--kb', {str(EXAMPLES / 'kb')!r}, '--cases', {str(EXAMPLES / 'cases.jsonl')!r}, "
            f"'--shard', '1/1', '--embed-backend', 'onnx', '--out', {str(tmp_path / 'shard')!r}])")
    env = {**os.environ, "RETRIEVAL_GATE_ONNX_DIR": str(tmp_path / "onnx"), "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert "pip install 'retrieval-gate[onnx]'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "onnx").exists() or not any((tmp_path / "onnx").rglob("*.onnx"))


def test_eval_with_the_onnx_backend_records_it_in_the_fingerprint(tmp_path: Path, export_root: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL_GATE_ONNX_DIR", str(export_root))
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as info:
        main(["eval", "--kb", str(EXAMPLES / "kb"), "--cases", str(EXAMPLES / "cases.jsonl"), "--ephemeral",
              "--embed-backend", "onnx", "--out", str(out)])
    assert info.value.code in (0, None)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["config"]["model_sha256"].endswith("+onnx")
    assert data["extras"]["embedding"]["passages_embedded"] > 0


def test_an_export_that_disagrees_with_torch_is_not_kept_and_auto_then_runs_torch(
        ref: ModelRef, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval_gate.embed import onnx
    from retrieval_gate.embed.backends import resolve_backend

    monkeypatch.setattr(onnx, "VERIFY_TOLERANCE", -1.0)  # no export can pass: the check is what is tested
    folder = tmp_path / ref.sha256
    with pytest.raises(EmbedderError, match=r"disagrees with sentence-transformers.*--embed-backend torch"):
        ensure_exported(ref, folder=folder, quantized=False)
    assert sorted(p.name for p in folder.iterdir()) == [onnx.REJECTED_FILE]
    record = json.loads((folder / onnx.REJECTED_FILE).read_text(encoding="utf-8"))
    assert record["kept"] is False and 0 <= record["max_abs_diff"] < 1e-5
    assert resolve_backend(ref, settings=EmbedSettings(export_root=tmp_path)) == "torch"
    with pytest.raises(EmbedderError, match="disagrees"):  # asked for by name: one sentence, no second export
        OnnxEmbedder(ref, backend="onnx", export_root=tmp_path).embed_documents(TEXTS[:1])
