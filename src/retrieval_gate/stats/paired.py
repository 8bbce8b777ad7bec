"""The paired test, the one the comparison, the side-by-side and the sweep all call. Pure.

Per column (a measure) of paired per-case scores ``now`` and ``before`` (n cases × m measures):

- **one rounding rule**: every per-case score is rounded to ``SCORE_DECIMALS`` (6) on both sides
  before differencing, so an unchanged case contributes exactly 0 (``d_i = round(now_i) −
  round(before_i)``);
- ``delta`` = ``math.fsum(d) / n``;
- ``p``: two sided, and ``one_sided`` in the direction of Δ (a drop, or no change: P(S* ≤ S); a
  gain: P(S* ≥ S)) — ``stats.sign_flip``: the exact sign test when every rounded score of the
  column is 0 or 1 on both sides (``binary``), the sign-flip permutation test otherwise (exact
  where its law is small, else Monte Carlo, seeded); the columns of one call share their draws;
- ``interval(level)``: the paired interval (``stats.paired_interval``: Tango's score interval
  for a binary column, a t interval or fractional Tango otherwise);
- ``changed`` / ``lost`` / ``gained``: cases whose rounded score changed, went down, went up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from retrieval_gate.stats.paired_interval import paired_interval
from retrieval_gate.stats.sign_flip import DEFAULT_RESAMPLES, sign_flip_tests

SCORE_DECIMALS = 6  # per-case scores are compared at this many decimals, everywhere


class Paired(NamedTuple):
    """One measure's paired difference over n cases (module docstring)."""

    n: int
    delta: float
    p: float
    one_sided: float
    diffs: np.ndarray
    binary: bool
    changed: int
    lost: int
    gained: int

    def interval(self, level: float) -> tuple[tuple[float, float], str]:
        """``((low, high), method)``: the paired interval at ``level``."""
        return paired_interval(self.diffs, binary=self.binary, level=level)


def _rounded(scores: np.ndarray) -> np.ndarray:
    """The rounding rule, as Python's ``round`` (correctly rounded; numpy's ``round`` is not)
    rounds the numbers a baseline file keeps."""
    data = np.asarray(scores, dtype=np.float64)
    data = data.reshape(len(data), -1) if data.size else data.reshape(0, 0)
    return np.asarray([[round(v, SCORE_DECIMALS) for v in row] for row in data.tolist()],
                      dtype=np.float64).reshape(data.shape)


def paired_columns(now: np.ndarray, *, before: np.ndarray, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = 0) -> list[Paired]:
    """One ``Paired`` per column of two n × m arrays of per-case scores (n ≥ 1, no NaN)."""
    a, b = _rounded(now), _rounded(before)
    if a.shape != b.shape or a.shape[0] == 0:
        raise ValueError("paired scores need the same n ≥ 1 cases on both sides")
    d = a - b
    binary = np.isin(a, (0.0, 1.0)).all(axis=0) & np.isin(b, (0.0, 1.0)).all(axis=0)
    tests = sign_flip_tests(d, resamples=resamples, seed=seed)
    out = []
    for j in range(d.shape[1]):
        values = np.ascontiguousarray(d[:, j])
        delta = math.fsum(values.tolist()) / len(values)
        out.append(Paired(len(values), delta, float(tests.two_sided[j]),
                          float(tests.greater[j] if delta > 0 else tests.less[j]), values, bool(binary[j]),
                          int(np.count_nonzero(values)), int(np.count_nonzero(values < 0)),
                          int(np.count_nonzero(values > 0))))
    return out


def paired(now: Sequence[float], *, before: Sequence[float], resamples: int = DEFAULT_RESAMPLES,
           seed: int = 0) -> Paired:
    """One measure: ``paired_columns`` of one column."""
    return paired_columns(np.asarray(now, dtype=np.float64)[:, None],
                          before=np.asarray(before, dtype=np.float64)[:, None], resamples=resamples, seed=seed)[0]
