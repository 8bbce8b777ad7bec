"""The numeric bounds of the suite's settings, written once: the typed models (``Field(ge=…)``)
and the CLI's flags (``typer.Option(min=…, max=…)``) both read them from here, so a config file
and a flag accept the same values. Plain numbers: the CLI reads them at start-up without
importing pydantic."""

from __future__ import annotations

MIN_CHUNK_SIZE = 50  # chunking.size / --chunk-size (characters or word pieces)
MIN_BATCH_SIZE = 1  # batch_size / --batch-size: texts the embedder takes at once
MAX_BATCH_SIZE = 100_000
MIN_OVERFETCH = 1  # overfetch / --overfetch: chunks fetched per wanted card at first
MAX_OVERFETCH = 1_000
