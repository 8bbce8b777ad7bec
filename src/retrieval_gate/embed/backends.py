"""The embedding backends (``--embed-backend``; issue 13, part 4) and the one place that builds an
embedder from a suite's settings (``eval``, ``embed``).

``torch`` (the default) is the plain sentence-transformers process (``embed/sentence.py``);
``onnx`` and ``onnx-int8`` run an export of the same weights on ONNX Runtime (``embed/onnx.py``).
Their vectors differ from torch's (README "Embedding backends" has the measured differences), so
their identity carries the backend and they never share cached vectors with it."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.embed.base import Embedder
from retrieval_gate.embed.resolve import ModelRef


def make_embedder(ref: ModelRef, *, backend: str, batch_size: int, device: str | None,
                  onnx_root: Path | None = None) -> Embedder:
    """The embedder of ``backend`` for the model ``ref`` (nothing is loaded yet). ``onnx_root``:
    where ONNX exports are kept (default: ``environment.onnx_export_root``)."""
    if backend == "torch":
        from retrieval_gate.embed.sentence import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(ref, batch_size=batch_size, device=device)
    from retrieval_gate.embed.onnx import OnnxEmbedder

    if onnx_root is None:
        from retrieval_gate.environment import onnx_export_root, read_environment

        onnx_root = onnx_export_root(read_environment())
    return OnnxEmbedder(ref, backend=backend, export_root=onnx_root, batch_size=batch_size)
