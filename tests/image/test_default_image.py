"""The default image is torch-free: no torch, sentence-transformers or transformers to import; the
bundled model's ONNX export was checked against torch at build time (the record ``auto`` takes
the ONNX path by); and a suite that needs torch — the cross-encoder rerank, a model other than
the bundled one — stops with exit 2 and one line naming the full image variant, no traceback.
(The cold run's numbers against the torch backend's, case for case: test_container.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.image.conftest import Built, Runner, example_workspace

EXPORT_ROOT = "/opt/retrieval-gate/onnx"


def _python(image: Built, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "python", image.tag,
                           "-c", code], capture_output=True, text=True, check=False, timeout=300)


@pytest.mark.parametrize("module", ["torch", "sentence_transformers", "transformers"])
def test_the_default_image_cannot_import_torch_or_its_libraries(image: Built, module: str) -> None:
    proc = _python(image, f"import {module}")
    assert proc.returncode == 1 and f"No module named '{module}'" in proc.stderr, proc.stderr[-2000:]


def test_the_image_holds_the_checked_export_that_auto_takes(image: Built) -> None:
    proc = _python(image, f"""
import json, pathlib
from retrieval_gate.embed.backends import resolve_backend
from retrieval_gate.embed.resolve import resolve_model
from retrieval_gate.embed.settings import EmbedSettings
ref = resolve_model("all-MiniLM-L6-v2")
folder = pathlib.Path("{EXPORT_ROOT}") / ref.sha256
print(json.dumps({{"backend": resolve_backend(ref, settings=EmbedSettings(export_root=pathlib.Path("{EXPORT_ROOT}"))),
                  "record": json.loads((folder / "model.onnx.verified.json").read_text()),
                  "sha256": ref.sha256, "onnx_bytes": (folder / "model.onnx").stat().st_size}}))
""")
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout)
    assert seen["backend"] == "onnx"
    record = seen["record"]
    assert record["kept"] is True and record["model_sha256"] == seen["sha256"]
    assert record["tolerance"] == 1e-5 and 0 <= record["max_abs_diff"] <= 1e-5  # embed/onnx.py VERIFY_TOLERANCE
    assert seen["onnx_bytes"] > 10_000_000  # the graph with its weights, not a stub


@pytest.mark.parametrize(("suite_lines", "named"), [
    ("    retriever: bm25+rerank\n", "cross-encoder rerank"),
    ("    model: sentence-transformers/all-mpnet-base-v2\n", "all-mpnet-base-v2"),
])
def test_a_suite_that_needs_torch_exits_2_naming_the_full_image(image: Built, tmp_path: Path, suite_lines: str,
                                                               named: str) -> None:
    workspace = example_workspace(tmp_path / "workspace")
    config = workspace / "retrieval-gate.yml"
    config.write_text(config.read_text(encoding="utf-8") + suite_lines, encoding="utf-8")
    run = Runner(tmp_path / "runner", workspace, image.tag).run(
        event_name="push", event={"ref": "refs/heads/feature"}, ref="refs/heads/feature",
        inputs={"config": "retrieval-gate.yml", "mode": "report"}, network="none")
    assert run.exit_code == 2, run.everything()[-3000:]
    assert "Traceback" not in run.everything()
    lines = [line for line in (run.stdout + run.stderr).splitlines() if "full image variant" in line]
    assert len(lines) == 1 and named in lines[0] and "scripts/build-image --full" in lines[0], run.everything()
