"""Defaults the CLI shows in ``--help`` and the comparison uses, written once. This module imports
nothing of the package, so the CLI reads them without importing numpy or the baseline model."""

from __future__ import annotations

from typing import Literal, get_args

# The multiple-comparison corrections over the judged rows' p-values (the gate's ``correction``
# key, ``--correction``, ``compare.power.adjust_p``): the one list of their names.
Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)

DEFAULT_RESAMPLES = 10_000  # random sign flips and bootstrap resamples (compare.stats)
DEFAULT_HISTORY_LIMIT = 100  # history entries a baseline keeps (compare.baseline_update)
