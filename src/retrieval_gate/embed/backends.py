"""The one place that builds an embedder from its settings (``embed.settings.EmbedSettings``;
``eval``, ``embed``).

``torch`` is the plain sentence-transformers process (``embed/sentence.py``); ``onnx`` and
``onnx-int8`` run an export of the same weights on ONNX Runtime (``embed/onnx.py``). ``auto``
(the default) is ``onnx`` (fp32) on the CPU when the model's export is in the export folder and
passed its check against torch, or can be made there (``onnx`` and torch installed: exported and
checked on the first text to embed); ``torch`` otherwise (another device, an export that failed
its check, no ``onnx`` package). Where torch is not installed either (the action's default
image), that is ``NeedsTorchError`` naming the full image (``embed/runtime.py``). Deciding reads
files only: a run whose texts are all cached imports neither torch nor ONNX Runtime.

Their vectors differ in the last bits (fp32 ONNX; int8: measurably), so each backend's identity
carries it and they never share cached vectors; a baseline made by the other fp32 backend still
compares like for like (``baseline.fingerprint.same_vectors``)."""

from __future__ import annotations

from importlib.util import find_spec

from retrieval_gate.embed.base import Embedder
from retrieval_gate.embed.resolve import ModelRef
from retrieval_gate.embed.settings import EmbedSettings
from retrieval_gate.errors import EmbedderError


def resolve_backend(ref: ModelRef, *, settings: EmbedSettings) -> str:
    """The backend ``settings.backend`` runs for ``ref``: itself, or what ``auto`` picks."""
    if settings.backend != "auto":
        return settings.backend
    if settings.device != "cpu" or settings.export_root is None:
        return "torch"
    from retrieval_gate.embed.onnx import export_state

    state = export_state(settings.export_root / ref.sha256)
    if state == "verified":
        return "onnx"
    if state == "rejected":
        return "torch"
    return "onnx" if _can_export() else "torch"


def _can_export() -> bool:
    """The export's packages are installed (looked up, not imported)."""
    return all(find_spec(name) is not None for name in ("onnx", "onnxruntime", "torch", "tokenizers"))


def make_embedder(ref: ModelRef, *, settings: EmbedSettings) -> Embedder:
    """The embedder of ``settings.backend`` for the model ``ref`` (nothing is loaded yet)."""
    backend = resolve_backend(ref, settings=settings)
    if backend == "torch":
        from retrieval_gate.embed.runtime import require_torch
        from retrieval_gate.embed.sentence import SentenceTransformerEmbedder

        why = "embed_backend torch" if settings.backend == "torch" else (
            f"no checked ONNX export of it in {settings.export_root}" if settings.export_root is not None
            else "no folder for ONNX exports")
        require_torch(f"model {ref.name!r} ({why})")

        return SentenceTransformerEmbedder(ref, batch_size=settings.batch_size, device=settings.device)
    from retrieval_gate.embed.onnx import OnnxEmbedder

    if settings.export_root is None:
        raise EmbedderError(f"embed backend {backend}: no folder for the ONNX export was given "
                            "(EmbedSettings.export_root; the CLI and the action take it from the environment)")
    return OnnxEmbedder(ref, backend=backend, export_root=settings.export_root, batch_size=settings.batch_size)


def embedder_for(settings: EmbedSettings) -> Embedder:
    """The embedder of ``settings.model``: an OpenAI-compatible endpoint for ``openai:NAME``
    (``embed/openai.py``), else the model's files resolved and run by ``make_embedder``."""
    from retrieval_gate.embed.openai import OpenAIEmbedder, is_api_model

    if is_api_model(settings.model):
        return OpenAIEmbedder(settings.model, base_url=settings.api_base_url, api_key=settings.api_key,
                              timeout_s=settings.api_timeout_s, deadline_s=settings.api_deadline_s,
                              retries=settings.api_retries, backoff_s=settings.api_backoff_s,
                              max_batch=settings.api_max_batch)
    from retrieval_gate.embed.resolve import resolve_model

    return make_embedder(resolve_model(settings.model), settings=settings)
