"""sentence-transformers adapter. The model is loaded on the first text to embed, not before:
``identity()`` comes from the files' hash (see ``resolve``), so a fully cached run never imports
torch.

Device: ``cpu`` (the default), ``cuda``, ``mps`` or ``auto`` (the first of cuda, mps, cpu that
torch offers — deciding imports torch). Vectors made on another device class may differ in the
last bits, so the identity of a non-CPU embedder carries the class (``<files sha256>+cuda``):
its vectors get their own cache space and store, and a comparison shows the change. CPU keeps
the plain files hash (caches and baselines made before devices existed stay valid)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from retrieval_gate.embed.base import ModelIdentity
from retrieval_gate.embed.resolve import ModelRef
from retrieval_gate.errors import EmbedderError, UsageError

DEVICES = ("cpu", "cuda", "mps", "auto")


def resolve_device(device: str | None) -> str:
    """The device class to run on: ``cpu`` for None; ``auto`` asks torch."""
    if device is None or device == "cpu":
        return "cpu"
    if device not in DEVICES:
        raise UsageError(f"device {device!r}: expected one of {', '.join(DEVICES)}")
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


class SentenceTransformerEmbedder:
    """Loads ``ref.path`` with ``local_files_only`` (never the hub), encodes with
    ``normalize_embeddings=True``; documents and queries use the model's ``document`` / ``query``
    prompts where it defines them (``encode_document`` / ``encode_query``)."""

    def __init__(self, ref: ModelRef, *, batch_size: int = 64, device: str | None = None):
        self.ref = ref
        self.batch_size = batch_size
        self.requested_device = device
        self._device: str | None = None
        self._model: Any = None

    @property
    def device(self) -> str:
        """The device class (``cpu``, ``cuda``, ``mps``), ``auto`` resolved once."""
        if self._device is None:
            self._device = resolve_device(self.requested_device)
        return self._device

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def identity(self) -> ModelIdentity:
        ident = self.ref.identity
        if self.device == "cpu":
            return ident
        return ModelIdentity(name=ident.name, sha256=f"{ident.sha256}+{self.device}")

    def model(self) -> Any:
        if self._model is None:
            self._model = load_model(self.ref, device=self.device)
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "encode_document")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "encode_query")

    def _encode(self, texts: Sequence[str], method: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        model = self.model()
        encode = getattr(model, method, model.encode)  # sentence-transformers < 5: plain encode
        try:
            vectors = encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                             convert_to_numpy=True, show_progress_bar=False)
        except Exception as exc:
            raise EmbedderError(f"model {self.ref.name!r} failed to embed: {exc}") from exc
        return np.ascontiguousarray(vectors, dtype=np.float32)


def load_model(ref: ModelRef, *, device: str | None = None) -> Any:
    """Import sentence-transformers (≈4 s: torch) and load the folder, quietly."""
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EmbedderError(f"sentence-transformers is not installed: {exc}") from None
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(ref.path), device=device, local_files_only=True)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EmbedderError(f"model {ref.name!r} ({ref.path}) could not be loaded: {first}") from None
