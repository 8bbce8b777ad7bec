"""The one paired test (``stats/paired.py``): its rounding rule, by hand, and the three callers —
the comparison, the side-by-side and the sweep — giving the same numbers on the same cases."""

from __future__ import annotations

import random

import numpy as np
import pytest

from retrieval_gate.stats.paired import SCORE_DECIMALS, paired, paired_columns
from retrieval_gate.sweep.stats import paired as sweep_paired
from tests.reference import sign_flip_p_value


def test_one_rounding_rule_an_unchanged_case_contributes_exactly_zero() -> None:
    """0.1234564 and 0.1234561 are the same score at 6 decimals: no change, no test to run."""
    stat = paired([0.1234564, 0.5], before=[0.1234561, 0.5])
    assert SCORE_DECIMALS == 6
    assert stat.delta == 0.0 and stat.changed == 0 and stat.p == 1.0
    assert stat.diffs.tolist() == [0.0, 0.0]


def test_by_hand_a_binary_column_gets_the_exact_sign_test() -> None:
    """4 gained, 0 lost of 6: Δ = 4/6; the exact two-sided sign test: 2 · (1/2)^4 = 0.125."""
    stat = paired([1, 1, 1, 1, 0, 1], before=[0, 0, 0, 0, 0, 1])
    assert stat.binary and (stat.n, stat.gained, stat.lost, stat.changed) == (6, 4, 0, 4)
    assert stat.delta == pytest.approx(4 / 6)
    assert stat.p == pytest.approx(0.125)
    assert stat.one_sided == pytest.approx(0.0625)
    (low, high), method = stat.interval(0.95)
    assert method == "tango" and low < 4 / 6 < high


def test_a_continuous_column_and_columns_tested_together() -> None:
    rng = random.Random(7)
    now = [rng.random() for _ in range(40)]
    before = [v - rng.uniform(-0.1, 0.3) for v in now]
    one = paired(now, before=before, seed=3)
    assert not one.binary
    assert one.p == pytest.approx(sign_flip_p_value(np.round(now, 6) - np.round(before, 6), seed=3))
    both = paired_columns(np.column_stack([now, now]), before=np.column_stack([before, before]), seed=3)
    assert both[0].delta == both[1].delta == one.delta
    with pytest.raises(ValueError, match="same n"):
        paired_columns(np.zeros((0, 1)), before=np.zeros((0, 1)))


def test_the_sweep_reports_the_same_test() -> None:
    """The sweep's paired figure is the one test's, rounded for its file."""
    rng = random.Random(11)
    ids = [f"c{i}" for i in range(30)]
    a = {i: rng.choice([0.0, 0.3333333, 0.5, 1.0]) for i in ids}
    b = {i: rng.choice([0.0, 0.3333334, 0.5, 1.0]) for i in ids}
    got = sweep_paired(a, b, ids, alpha=0.05, seed=0)
    stat = paired([a[i] for i in ids], before=[b[i] for i in ids], seed=0)
    ci, _ = stat.interval(0.95)
    assert got == {"delta": round(stat.delta, 6), "ci": [round(ci[0], 6), round(ci[1], 6)], "p": round(stat.p, 6),
                   "n": 30}
