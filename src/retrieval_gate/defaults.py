"""The plain numbers of the suite's settings, written once, that the CLI needs at start-up: the
defaults ``--help`` shows and the comparison uses, and the bounds that the typed models
(``Field(ge=…)``) and the CLI's flags (``typer.Option(min=…, max=…)``) both read, so a config file
and a flag accept the same values. This module imports nothing, so ``--help`` reads them without
importing numpy, pydantic or the baseline model."""

from __future__ import annotations

DEFAULT_RESAMPLES = 10_000  # random sign flips and bootstrap resamples (stats.sign_flip)
DEFAULT_HISTORY_LIMIT = 100  # history entries a baseline keeps (baseline.update)

MIN_CHUNK_SIZE = 50  # chunking.size / --chunk-size (characters or word pieces)
MIN_BATCH_SIZE = 1  # batch_size / --batch-size: texts the embedder takes at once
MAX_BATCH_SIZE = 100_000
MIN_OVERFETCH = 1  # overfetch / --overfetch: chunks fetched per wanted card at first
MAX_OVERFETCH = 1_000
