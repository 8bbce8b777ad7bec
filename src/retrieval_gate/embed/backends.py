"""The one place that builds an embedder from its settings (``embed.settings.EmbedSettings``;
``eval``, ``embed``).

``torch`` (the default) is the plain sentence-transformers process (``embed/sentence.py``);
``onnx`` and ``onnx-int8`` run an export of the same weights on ONNX Runtime (``embed/onnx.py``).
Their vectors differ from torch's (docs/eval.md has the measured differences), so their
identity carries the backend and they never share cached vectors with it."""

from __future__ import annotations

from retrieval_gate.embed.base import Embedder
from retrieval_gate.embed.resolve import ModelRef
from retrieval_gate.embed.settings import EmbedSettings
from retrieval_gate.errors import EmbedderError


def make_embedder(ref: ModelRef, *, settings: EmbedSettings) -> Embedder:
    """The embedder of ``settings.backend`` for the model ``ref`` (nothing is loaded yet)."""
    if settings.backend == "torch":
        from retrieval_gate.embed.sentence import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(ref, batch_size=settings.batch_size, device=settings.device)
    from retrieval_gate.embed.onnx import OnnxEmbedder

    if settings.export_root is None:
        raise EmbedderError(f"embed backend {settings.backend}: no folder for the ONNX export was given "
                            "(EmbedSettings.export_root; the CLI and the action take it from the environment)")
    return OnnxEmbedder(ref, backend=settings.backend, export_root=settings.export_root,
                        batch_size=settings.batch_size)
