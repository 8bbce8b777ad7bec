"""The default ``embed_backend: auto`` with the real bundled model: once the checked fp32 export
is in the export folder, the example suite's per-case numbers equal the torch backend's, a
baseline made by torch compares like for like, a one-card edit embeds through ONNX Runtime and
``tokenizers`` with torch unimportable, and a run whose texts are all cached loads no model
runtime at all (only ``tokenizers``, for the truncation count). Neither imports ``chromadb``: the
warm store is opened through chromadb's Rust core (``store/chroma_direct.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.embed.onnx import ensure_exported
from retrieval_gate.embed.resolve import resolve_model
from retrieval_gate.environment import onnx_export_root
from retrieval_gate.score.results import Results
from retrieval_gate.store import chroma_direct

pytestmark = pytest.mark.model
pytest.importorskip("onnx", reason="the onnx extra (pip install 'retrieval-gate[onnx]') is not installed")

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
RUNTIMES = ("torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers", "chromadb")
# A process in which torch, sentence-transformers and transformers cannot be imported (a
# meta-path finder that refuses them), running the CLI and printing which runtimes it loaded.
GUARDED = """
import importlib.abc, json, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "sentence_transformers", "transformers"}:
            raise ImportError(f"{name} is blocked in this test")
        return None
sys.meta_path.insert(0, Refuse())
from retrieval_gate.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code or 0
else:
    code = 0
print(json.dumps({"code": code, "loaded": sorted(m for m in RUNTIMES if m in sys.modules)}))
""".replace("RUNTIMES", repr(RUNTIMES))


@pytest.fixture(scope="module")
def export_root() -> Path:
    """The export folder the CLI uses here (made and checked once, then reused)."""
    root = onnx_export_root(dict(os.environ))
    ref = resolve_model("all-MiniLM-L6-v2")
    ensure_exported(ref, folder=root / ref.sha256, quantized=False)
    return root


def _eval(cwd: Path, *flags: str, guarded: bool = False) -> tuple[dict, dict]:
    out = cwd / "r.json"
    args = ["eval", "--kb", "kb", "--cases", "cases.jsonl", "--out", str(out), *flags]
    code = GUARDED if guarded else "import sys; from retrieval_gate.cli import main; main(sys.argv[1:])"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1]) if guarded else {}
    return json.loads(out.read_text(encoding="utf-8")), report


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES / "kb", tmp_path / "kb")
    shutil.copy(EXAMPLES / "cases.jsonl", tmp_path / "cases.jsonl")
    return tmp_path


def test_auto_gives_the_torch_backends_per_case_numbers_and_compares_like_for_like(suite: Path,
                                                                                   export_root: Path) -> None:
    auto, _ = _eval(suite, "--ephemeral")
    torch_run, _ = _eval(suite, "--ephemeral", "--embed-backend", "torch")
    assert auto["config"]["model_sha256"] == torch_run["config"]["model_sha256"] + "+onnx"  # says which backend
    by_id = {c["id"]: c for c in torch_run["cases"]}
    assert len(auto["cases"]) == 62
    for case in auto["cases"]:
        assert (case["scores"], case["retrieved"]) == (by_id[case["id"]]["scores"], by_id[case["id"]]["retrieved"])
    assert auto["aggregates"] == torch_run["aggregates"]
    baseline = update_baseline(baseline=None, results=Results.model_validate(torch_run), sha="a1", ref="main",
                               timestamp="2026-01-01T00:00:00Z")
    comparison = compare(results=Results.model_validate(auto), baseline=baseline, gate=GateSettings())
    assert comparison.like_for_like
    assert [c.key for c in comparison.config_changes] == ["config.model_sha256"]


def test_a_one_card_edit_embeds_without_torch_and_a_cached_run_loads_no_runtime(suite: Path,
                                                                                export_root: Path) -> None:
    _eval(suite)  # the store and the embedding cache, filled
    card = sorted((suite / "kb" / "en-US").glob("*.md"))[0]
    card.write_text(card.read_text(encoding="utf-8") + "\nRefunds now also reach prepaid cards.\n", encoding="utf-8")
    edited, report = _eval(suite, guarded=True)
    # chromadb stays out where the store is opened through its Rust core (the chromadb versions
    # store/chroma_direct.py is checked against); another version is read through its client.
    client = [] if chroma_direct._tested_version() else ["chromadb"]
    assert report == {"code": 0, "loaded": sorted([*client, "onnxruntime", "tokenizers"])}
    assert edited["extras"]["embedding"]["passages_embedded"] == 1
    assert edited["config"]["model_sha256"].endswith("+onnx")
    cached, report = _eval(suite, guarded=True)
    assert report == {"code": 0, "loaded": sorted([*client, "tokenizers"])}  # the truncation count only
    assert cached["extras"]["embedding"]["passages_embedded"] == 0
    assert [c["scores"] for c in cached["cases"]] == [c["scores"] for c in edited["cases"]]
