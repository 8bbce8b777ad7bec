"""The multiple-comparison correction. Pure.

**Corrections** over the p-values of a family of rows, adjusted p-values:

- ``holm`` (default; controls the family-wise error rate): sorted ascending, ``p̃_(i) =
  max_{j ≤ i} min(1, (m − j + 1)·p_(j))``;
- ``bh`` (Benjamini–Hochberg, controls the false discovery rate): sorted ascending,
  ``p̃_(i) = min_{j ≥ i} min(1, m·p_(j)/j)``;
- ``none``: ``p̃ = p``.

A row is significant when ``p̃ < α``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

# The corrections' names (the ``correction`` key, ``--correction``): the one list of them.
Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)


def adjust_p(p_values: Sequence[float], method: str) -> list[float]:
    """Adjusted p-values in the input order (the module docstring)."""
    if method not in CORRECTIONS:
        raise ValueError(f"correction {method!r}: expected one of {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=np.float64)
    if len(p) == 0 or method == "none":
        return p.tolist()
    m = len(p)
    if method == "bh":  # p̃_(i) = min_{j ≥ i} min(1, m·p_(j)/j), ascending order
        order = np.argsort(p, kind="stable")
        scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
        adjusted = np.empty(m)
        adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
        return adjusted.tolist()
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted.tolist()
