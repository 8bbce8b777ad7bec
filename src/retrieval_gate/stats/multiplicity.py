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

# The corrections' names (the ``correction`` key, ``--correction``): the one list of them.
Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)


def adjust_p(p_values: Sequence[float], method: str) -> list[float]:
    """Adjusted p-values in the input order (the module docstring). Plain Python: a family is a
    few rows, and ``compare`` starts faster without numpy."""
    if method not in CORRECTIONS:
        raise ValueError(f"correction {method!r}: expected one of {', '.join(CORRECTIONS)}")
    p = [float(v) for v in p_values]
    m = len(p)
    if m == 0 or method == "none":
        return p
    order = sorted(range(m), key=p.__getitem__)  # ascending, stable
    adjusted = [0.0] * m
    if method == "bh":  # p̃_(i) = min_{j ≥ i} min(1, m·p_(j)/j)
        running = 1.0
        for rank in range(m - 1, -1, -1):
            running = min(running, min(1.0, m * p[order[rank]] / (rank + 1)))
            adjusted[order[rank]] = running
        return adjusted
    running = 0.0  # holm: p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j))
    for rank in range(m):
        running = max(running, min(1.0, (m - rank) * p[order[rank]]))
        adjusted[order[rank]] = running
    return adjusted
