"""Defaults the CLI shows in ``--help`` and the comparison uses, written once. This module imports
nothing, so the CLI reads them without importing numpy or the baseline model."""

from __future__ import annotations

DEFAULT_RESAMPLES = 10_000  # random sign flips and bootstrap resamples (stats.sign_flip)
DEFAULT_HISTORY_LIMIT = 100  # history entries a baseline keeps (baseline.update)
