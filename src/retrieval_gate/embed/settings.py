"""The embedder's settings: which model, how it runs, and where ONNX exports are kept. Pure.

The suite config (``settings.SuiteConfig``) holds the user's keys — ``model``, ``batch_size``,
``device``, ``embed_backend`` — and hands the dense side this one object (``SuiteConfig.embed``).
``export_root`` is no config key: the entry point fills it from the environment
(``environment.onnx_export_root``), so no adapter reads the environment itself."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from retrieval_gate.defaults import MAX_BATCH_SIZE, MIN_BATCH_SIZE

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 64
# The one rule for a batch size: the suite's ``batch_size`` key and this model both declare it so.
BatchSize = Annotated[int, Field(ge=MIN_BATCH_SIZE, le=MAX_BATCH_SIZE)]
Device = Literal["cpu", "cuda", "mps", "auto"]  # auto: cuda or mps when torch sees one
# torch: sentence-transformers (embed/sentence.py); onnx, onnx-int8: ONNX Runtime (embed/onnx.py);
# auto (the default): onnx fp32 on the CPU where the checked export is (or can be made), else torch
# (embed/backends.py, resolve_backend)
Backend = Literal["auto", "torch", "onnx", "onnx-int8"]
DEFAULT_BACKEND = "auto"


def backend_problem(*, backend: str, device: str) -> str | None:
    """Why ``backend`` cannot run on ``device``, or None: ONNX Runtime runs here on the CPU only."""
    if backend not in ("torch", "auto") and device != "cpu":
        return f"{backend} runs on the CPU (ONNX Runtime): device {device} needs embed_backend torch"
    return None


class EmbedSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = DEFAULT_MODEL  # a name or a local folder (embed/resolve.py)
    batch_size: BatchSize = DEFAULT_BATCH_SIZE
    device: Device = "cpu"
    backend: Backend = DEFAULT_BACKEND
    export_root: Path | None = None  # where ONNX exports are kept (one folder per model files hash)
    # ``model: openai:NAME`` (embed/openai.py): the endpoint, the key (read from ${NAME}, never shown)
    # and how long each request may take; the suite's options base_url, api_key, openai_*
    api_base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    api_timeout_s: float = 30.0
    api_deadline_s: float = 120.0
    api_retries: int = 2
    api_backoff_s: float = 1.0
    api_max_batch: int = 256

    @model_validator(mode="after")
    def _backend_fits_the_device(self) -> EmbedSettings:
        problem = backend_problem(backend=self.backend, device=self.device)
        if problem:
            raise ValueError(problem)
        return self
