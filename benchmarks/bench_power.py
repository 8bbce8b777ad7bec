"""What the gate's statistics do, by simulation: false alarms, power, the MDE formula, CI coverage.

Paired hit@k differences are simulated as a trec-style churn model: each case's difference is
``−1`` with probability ``(c + δ)/2``, ``+1`` with ``(c − δ)/2``, else 0 (``c`` = the share of
cases whose hit changes, ``δ`` = the true drop). nDCG-like differences (for coverage) are
``x_now − x_before`` with ``x ~ Beta(2, 3)`` and a shared case effect. Every p-value, interval and
MDE is computed by the gate's own functions (``compare.stats``, ``compare.interval``,
``compare.power``); a row "regresses" as the gate decides it (``Δ < −max_drop`` and ``p < α``,
p adjusted over the judged rows).

Tables (markdown, pasted into docs/baseline.md):

1. false-alarm rate under H0 (δ = 0) when the gate judges 3 / 9 / 27 independent rows of n = 100,
   with and without Holm (any judged row flagged = a false alarm);
2. power for a true 5-point hit@k drop at n = 30, 100, 300 (c = 0.10);
3. the MDE formula against simulated power at δ = MDE (should be ≈ 0.80), from observed variance
   (c = 0.30) and from the binomial bound (c = δ: every changed case lost its hit);
4. coverage of the inverted sign-flip interval at n = 10, 30, 100, 300 (95 % nominal), and how
   often the interval and the test disagree about 0 (must be 0) — beside the percentile
   bootstrap shown before.

Run: ``python benchmarks/bench_power.py [--reps 2000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from retrieval_gate.compare.interval import sign_flip_interval
from retrieval_gate.compare.power import adjust_p, mde, paired_sd
from retrieval_gate.compare.stats import paired_bootstrap_ci, sign_flip_p_values

ALPHA = 0.05
MAX_DROP = 0.02


def hit_diffs(rng: np.random.Generator, n: int, churn: float, drop: float) -> np.ndarray:
    u = rng.random(n)
    down = (churn + drop) / 2
    up = (churn - drop) / 2
    return np.where(u < down, -1.0, np.where(u < down + up, 1.0, 0.0))


def p_value(d: np.ndarray, seed: int) -> float:
    p, _ = sign_flip_p_values(d, resamples=2000, seed=seed)
    return float(p[0])


def flagged(d: np.ndarray, p: float) -> bool:
    return float(d.mean()) < -MAX_DROP and p < ALPHA


def false_alarms(rng: np.random.Generator, reps: int, rows: int, n: int = 100, churn: float = 0.10,
                 max_drop: float = MAX_DROP) -> tuple[float, float]:
    raw = holm = 0
    for r in range(reps):
        diffs = [hit_diffs(rng, n, churn, 0.0) for _ in range(rows)]
        ps = [p_value(d, r) for d in diffs]
        adjusted = adjust_p(ps, "holm")
        raw += any(float(d.mean()) < -max_drop and p < ALPHA for d, p in zip(diffs, ps, strict=True))
        holm += any(float(d.mean()) < -max_drop and p < ALPHA for d, p in zip(diffs, adjusted, strict=True))
    return raw / reps, holm / reps


def power(rng: np.random.Generator, reps: int, n: int, drop: float, churn: float, max_drop: float = MAX_DROP,
          companions: int = 0) -> float:
    """P(the row is flagged) for a true drop; with ``companions`` null rows in a Holm family."""
    caught = 0
    for r in range(reps):
        d = hit_diffs(rng, n, churn, drop)
        p = p_value(d, r)
        if companions:
            others = [p_value(hit_diffs(rng, n, churn, 0.0), r) for _ in range(companions)]
            p = adjust_p([p, *others], "holm")[0]
        caught += float(d.mean()) < -max_drop and p < ALPHA
    return caught / reps


def ndcg_like(rng: np.random.Generator, n: int, shift: float) -> np.ndarray:
    base = rng.beta(2, 3, n)
    noise = rng.normal(0, 0.15, n) * (rng.random(n) < 0.4)  # 40 % of the cases move
    now = np.clip(base + noise - shift, 0, 1)
    return np.round(now - base, 6)


def coverage(rng: np.random.Generator, reps: int, n: int, kind: str) -> tuple[float, int, float, float, int]:
    """(coverage of the true mean, disagreements between CI and test about 0, mean width; the
    same two for the percentile bootstrap used before)."""
    if kind == "hit":
        truth = -0.05
        draw = lambda: hit_diffs(rng, n, 0.2, 0.05)  # noqa: E731
    else:
        big = np.concatenate([ndcg_like(np.random.default_rng(99), 200_000, 0.03)])
        truth = float(big.mean())
        draw = lambda: ndcg_like(rng, n, 0.03)  # noqa: E731
    covered = disagree = boot_covered = boot_disagree = 0
    width = 0.0
    for r in range(reps):
        d = draw()
        p = p_value(d, r)
        low, high = sign_flip_interval(d, level=1 - ALPHA, p_value=p, resamples=2000, seed=r)
        covered += low <= truth <= high
        disagree += (low <= 0 <= high) != (p >= ALPHA)
        width += high - low
        b_low, b_high = paired_bootstrap_ci(d, level=1 - ALPHA, resamples=2000, seed=r)
        boot_covered += b_low <= truth <= b_high
        boot_disagree += (b_low <= 0 <= b_high) != (p >= ALPHA)
    return covered / reps, disagree, width / reps, boot_covered / reps, boot_disagree


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    began = time.perf_counter()
    reps = args.reps

    print(f"reps = {reps}, alpha = {ALPHA}, max_drop = {MAX_DROP}, seed = {args.seed}\n")
    print("1. False alarms under H0 (hit@k, n = 100 per row, 10 % of cases change, independent rows)\n")
    print("| judged rows | any row flagged, uncorrected | with Holm |")
    print("|--:|--:|--:|")
    for rows in (3, 9, 27):
        raw, holm = false_alarms(rng, reps, rows)
        print(f"| {rows} | {raw:.3f} | {holm:.3f} |")
    print("\n   (max_drop = 0, the test alone)\n")
    print("| judged rows | uncorrected | with Holm |")
    print("|--:|--:|--:|")
    for rows in (3, 9, 27):
        raw, holm = false_alarms(rng, reps, rows, max_drop=0.0)
        print(f"| {rows} | {raw:.3f} | {holm:.3f} |")

    print("\n2. Power for a true 5-point hit@k drop (10 % of cases change)\n")
    print("| n | power, one row | power, Holm over 3 rows | MDE (observed variance) |")
    print("|--:|--:|--:|--:|")
    for n in (30, 100, 300):
        one = power(rng, reps, n, 0.05, 0.10)
        three = power(rng, reps, n, 0.05, 0.10, companions=2)
        size, _ = mde(n=n, sd=math.sqrt(0.10 - 0.05 ** 2), alpha=ALPHA)
        print(f"| {n} | {one:.3f} | {three:.3f} | {size:.3f} |")

    print("\n3. The MDE formula against simulated power at δ = MDE (target 0.80; max_drop = 0)\n")
    print("| n | method | MDE | simulated power |")
    print("|--:|:--|--:|--:|")
    for n in (30, 100, 300):
        # observed variance: churn 0.30; the sd the formula sees is that of the differences
        sd = paired_sd(hit_diffs(np.random.default_rng(7), 1_000_000, 0.30, 0.0))
        size, method = mde(n=n, sd=sd, alpha=ALPHA)
        sim = power(rng, reps, n, size, 0.30, max_drop=0.0)
        print(f"| {n} | {method} (c = 0.30) | {size:.3f} | {sim:.3f} |")
        size, method = mde(n=n, sd=None, alpha=ALPHA)
        sim = power(rng, reps, n, size, size, max_drop=0.0)
        print(f"| {n} | {method} (c = δ) | {size:.3f} | {sim:.3f} |")

    print("\n4. Coverage of the 95 % interval (sign-flip test inverted)\n")
    print("| n | hit@k: coverage | disagree with p | width | bootstrap: coverage | disagree with p "
          "| nDCG-like: coverage | disagree with p | width | bootstrap: coverage | disagree with p |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for n in (10, 30, 100, 300):
        cov_reps = max(100, reps // 4)
        hit = coverage(rng, cov_reps, n, "hit")
        cont = coverage(rng, cov_reps, n, "ndcg")
        print(f"| {n} | {hit[0]:.3f} | {hit[1]} | {hit[2]:.3f} | {hit[3]:.3f} | {hit[4]} "
              f"| {cont[0]:.3f} | {cont[1]} | {cont[2]:.3f} | {cont[3]:.3f} | {cont[4]} |")
    print(f"\n({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
