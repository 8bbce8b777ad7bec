"""Calibration of the comparison's statistics, by simulation with its own generator.

For n ∈ {30, 100, 300} × discordance ψ ∈ {2, 5, 20 %} × true Δ ∈ {0, −0.05}, binary (hit@k-like)
and continuous (nDCG-like) paired differences, the gate's own functions
(``stats.sign_flip.sign_flip_tests`` — the exact sign test for binary rows —,
``stats.paired_interval.paired_interval``, ``stats.power.mde``, ``compare.gate.row_status``)
are run on each simulated row and measured against the known truth:

- **coverage** of the 95 % interval (reported rows' level), beside a reference interval: Newcombe's
  hybrid score interval for paired proportions (method 10, Wilson intervals with the φ
  correlation correction) for binary rows, the percentile bootstrap the comparison showed before
  (``paired_bootstrap_ci`` in tests/reference.py) for continuous ones;
- **false alarms** (Δ = 0): share of rows with p < 0.05, and of rows the gate calls ``regressed``
  (max drop 0.02);
- **power** (Δ = −0.05): share of rows with p < 0.05 and a drop;
- **agreement**: share of rows where "the interval excludes 0" equals "p < 0.05", after the
  interval is extended to 0 where the test does not reject (``reconcile``; the share extended is
  shown too);
- **MDE check**: the MDE the tool computes for the cell (n, ψ, and the spread the generator has),
  then rows simulated at Δ = −MDE: the share detected (should be 70–90 %);
- **titles** under the null: full comparisons (``compare.compare``) of two exchangeable runs
  (a latent gold rank per case, each run moving it by ±1 with probability 0.05 each way) with
  13 slices × 14 metrics (hit/recall/nDCG at k = 1, 3, 5, 10, MRR at 5 and 10), the comment
  title's state as ``render.context.build_context`` sets it (nothing worse: ``unchanged``,
  ``balanced`` or ``unsure``), beside the title an uncorrected reading would give
  (any row ``regressed`` at its own p).

Generators. Binary: each case loses its hit with probability (ψ' + δ)/2 and gains with
(ψ' − δ)/2, ψ' = max(ψ, δ), δ = −Δ ≥ 0; unchanged cases hit with probability 0.6 (for
Newcombe's cells). Continuous: a case changes with probability ψ' = max(ψ, δ/0.35), by
u ~ Uniform(0.1, 0.6) (mean 0.35) with sign − with probability r, r set so that E d = Δ; values
rounded to 6 decimals. Seeded: the same arguments give the same table.

- **the gate** (``--gate``): full comparisons (``compare.compare`` with ``--fail-on-regression``,
  max drop 0.02) at n ∈ {41, 300} on single-gold cases (a latent gold rank per case; each run
  redraws a case's rank by ±1 or ±2 with probability ψ): under the null (two exchangeable runs)
  the share of comparisons the gate fails — the family-wise false-alarm rate of the judged family,
  the default one (hit@5 alone) and one of three rows (hit@5, recall@5, nDCG@5 named by max drop,
  Holm); and the judged row's MDE as the tool states it (one-sided, ``stats.power.mde``) for a
  binary cell of churn ψ ∈ {2, 5, 20 %}, with the share of rows simulated at Δ = −MDE (the binary
  generator below) where the one-sided exact sign test detects the drop.

Run: ``python benchmarks/bench_stats_calibration.py [--reps 400] [--title-reps 50] [--seed 0]``;
the gate alone: ``python benchmarks/bench_stats_calibration.py --gate --gate-reps 1000 --seed 0``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

from retrieval_gate.compare.gate import row_status
from retrieval_gate.stats.paired_interval import paired_interval, reconcile
from retrieval_gate.stats.power import mde
from retrieval_gate.stats.sign_flip import sign_flip_tests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.reference
from tests.reference import paired_bootstrap_ci, sign_flip_p_values

ALPHA = 0.05
MAX_DROP = 0.02
NS = (30, 100, 300)
DISCORDANCE = (0.02, 0.05, 0.20)
DELTAS = (0.0, -0.05)
MEAN_U = 0.35


def binary_rows(rng: np.random.Generator, n: int, psi: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Paired differences and the baseline hits (for Newcombe's 2×2 table)."""
    drop = -delta
    psi = max(psi, drop)
    u = rng.random(n)
    lost, gained = (psi + drop) / 2, (psi - drop) / 2
    d = np.where(u < lost, -1.0, np.where(u < lost + gained, 1.0, 0.0))
    base = np.where(d < 0, 1.0, np.where(d > 0, 0.0, (rng.random(n) < 0.6).astype(float)))
    return d, base


def continuous_psi(psi: float, delta: float) -> float:
    return min(1.0, max(psi, abs(delta) / MEAN_U))


def continuous_rows(rng: np.random.Generator, n: int, psi: float, delta: float) -> np.ndarray:
    psi = continuous_psi(psi, delta)
    r = 0.5 * (1 - delta / (MEAN_U * psi))  # P(a change is a drop): E d = ψ·0.35·(1 − 2r) = Δ
    moved = rng.random(n) < psi
    sign = np.where(rng.random(n) < r, -1.0, 1.0)
    return np.round(np.where(moved, sign * rng.uniform(0.1, 0.6, n), 0.0), 6)


def continuous_sd(psi: float, delta: float) -> float:
    """The population sd of the continuous generator's d."""
    psi = continuous_psi(psi, delta)
    second = psi * (0.1 ** 2 + 0.1 * 0.6 + 0.6 ** 2) / 3  # E u² of Uniform(0.1, 0.6)
    return math.sqrt(second - delta * delta)


def wilson(x: float, n: int, z: float) -> tuple[float, float]:
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def newcombe(d: np.ndarray, base: np.ndarray, level: float) -> tuple[float, float]:
    """Newcombe (1998) method 10: hybrid score interval for a paired difference of proportions."""
    n = len(d)
    cur = base + d
    a = float(np.sum((cur == 1) & (base == 1)))
    b = float(np.sum((cur == 1) & (base == 0)))
    c = float(np.sum((cur == 0) & (base == 1)))
    dd = float(n - a - b - c)
    z = float(norm.ppf(1 - (1 - level) / 2))
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, z)
    l2, u2 = wilson(a + c, n, z)
    denominator = (a + b) * (c + dd) * (a + c) * (b + dd)
    phi = 0.0 if denominator == 0 else (a * dd - b * c) / math.sqrt(denominator)
    diff = p1 - p2
    low = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = diff + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return low, high


def evaluate(d: np.ndarray, *, binary: bool, seed: int) -> tuple[float, tuple[float, float], str, bool, bool]:
    """p, the interval as the comparison shows it, the status, whether the interval was extended
    to 0, and whether it agrees with the test."""
    p, _ = sign_flip_p_values(d, resamples=2000, seed=seed)
    raw, _ = paired_interval(d, binary=binary, level=1 - ALPHA)
    ci, agrees, extended = reconcile(raw, significant=float(p[0]) < ALPHA)
    size, _ = mde(n=len(d), diffs=d, binary=binary, alpha=ALPHA)
    status = row_status(baseline=0.5, current=0.5, n=len(d), delta=float(d.mean()), p_value=float(p[0]),
                        tolerance=MAX_DROP, floor=None, alpha=ALPHA, require_significance=True,
                        mde=math.inf if size is None else size, changed=bool(np.any(d != 0)))
    return float(p[0]), ci, status, extended, agrees


def cell(rng: np.random.Generator, *, kind: str, n: int, psi: float, delta: float, reps: int) -> dict[str, float]:
    binary = kind == "binary"
    covered = ref_covered = alarms = regressed = agree = detected = extensions = 0
    for r in range(reps):
        if binary:
            d, base = binary_rows(rng, n, psi, delta)
            ref = newcombe(d, base, 1 - ALPHA)
        else:
            d = continuous_rows(rng, n, psi, delta)
            ref = paired_bootstrap_ci(d, level=1 - ALPHA, resamples=2000, seed=r)
        p, (low, high), status, extended, agrees = evaluate(d, binary=binary, seed=r)
        covered += low <= delta <= high
        ref_covered += ref[0] <= delta <= ref[1]
        alarms += p < ALPHA
        regressed += status == "regressed"
        agree += agrees
        extensions += extended
        detected += p < ALPHA and d.mean() < 0
    return {"coverage": covered / reps, "reference": ref_covered / reps, "p_below": alarms / reps,
            "regressed": regressed / reps, "agree": agree / reps, "detected": detected / reps,
            "extended": extensions / reps}


def mde_check(rng: np.random.Generator, *, kind: str, n: int, psi: float, reps: int) -> tuple[float | None, float]:
    """The tool's MDE for the cell's population, then the detection rate at Δ = −MDE."""
    binary = kind == "binary"
    if binary:
        # the population's observed churn is ψ; the tool reads it from the differences
        template = np.zeros(n)
        template[: round(psi * n)] = np.tile([-1.0, 1.0], n)[: round(psi * n)]
        size, _ = mde(n=n, diffs=template, binary=True, alpha=ALPHA)
    else:
        from retrieval_gate.stats.power import continuous_mde

        size = continuous_mde(n=n, sd=continuous_sd(psi, 0.0), unit=MEAN_U, alpha=ALPHA, churn=psi)
    if size is None:
        return None, float("nan")
    hits = 0
    for r in range(reps):
        if binary:
            d, _ = binary_rows(rng, n, psi, -size)
        else:
            d = continuous_rows(rng, n, psi, -size)
        p, _ = sign_flip_p_values(d, resamples=2000, seed=r)
        hits += p[0] < ALPHA and d.mean() < 0
    return size, hits / reps


def titles(rng: np.random.Generator, *, n: int, reps: int) -> tuple[float, float, int]:
    """Share of null comparisons whose title calls nothing worse (no case changed, cases moved both
    ways, or more lost than gained but too few to be sure — not "worse in places", "regressed" or
    "gate failed"), the share an uncorrected reading
    (any row regressed at its own p) would have called worse, and the rows per comparison."""
    from retrieval_gate.baseline.update import update_baseline
    from retrieval_gate.compare.comparison import compare
    from retrieval_gate.compare.gate import GateSettings
    from retrieval_gate.render.context import build_context
    from retrieval_gate.score.aggregate import aggregate, completeness
    from retrieval_gate.score.results import CaseResult, InputInfo, Results

    ks = (1, 3, 5, 10)
    metrics = [f"{m}@{k}" for m in ("hit", "recall", "ndcg") for k in ks] + ["mrr@5", "mrr@10"]

    def scores(rank: int) -> dict[str, float]:
        out = {}
        for k in ks:
            inside = rank <= k
            out[f"hit@{k}"] = out[f"recall@{k}"] = float(inside)
            out[f"ndcg@{k}"] = round(1 / math.log2(rank + 1), 6) if inside else 0.0
        for k in (5, 10):
            out[f"mrr@{k}"] = round(1 / rank, 6) if rank <= k else 0.0
        return out

    def results(ranks: np.ndarray) -> Results:
        cases = [CaseResult(id=f"q{i:04d}", query="q", status="scored", gold=["g"],
                            slices=["overall", f"locale=l{i % 4}", f"tag.team=t{i % 6}",
                                    f"form={'GAP' if i % 3 else 'MATCH'}"],
                            scores=scores(int(ranks[i]))) for i in range(n)]
        info = InputInfo(path="x", sha256="x", format="jsonl", count=n)
        return Results(tool_version="bench", suite="bench", k=list(ks), headline_k=5, metrics=metrics,
                       config={}, inputs={"kb": info, "cases": info, "run": info},
                       completeness=completeness(cases), aggregates=aggregate(cases), cases=cases)

    quiet = uncorrected_worse = rows = 0
    for r in range(reps):
        latent = rng.geometric(0.35, n)  # the system: the rank of each case's gold card (> 10: a miss)
        runs = []
        for _ in range(2):  # each run moves a case's rank by ±1 with probability 0.05 each way
            step = rng.choice([-1, 0, 1], size=n, p=[0.05, 0.9, 0.05])
            runs.append(results(np.maximum(1, latent + step)))
        baseline = update_baseline(baseline=None, results=runs[0], sha="b", ref="main",
                                   timestamp="2026-01-01T00:00:00Z")
        comparison = compare(results=runs[1], baseline=baseline, gate=GateSettings(), seed=r, resamples=2000)
        state = build_context(results=runs[1], comparison=comparison)["verdict"]["kind"]
        quiet += state not in ("mixed", "regressed", "fail")
        uncorrected_worse += any(row.status == "regressed" for row in comparison.rows)
        rows = len(comparison.rows)
    return quiet / reps, uncorrected_worse / reps, rows


GATE_NS = (41, 300)
GATE_CHURN = (0.05, 0.20)


def gate_cell(rng: np.random.Generator, *, n: int, psi: float, reps: int) -> dict[str, float]:
    """False alarms (null) of the default and the three-row judged family, the judged row's MDE
    the tool states for the cell, and the share of comparisons failed at a true drop of that MDE."""
    from retrieval_gate.baseline.update import update_baseline
    from retrieval_gate.compare.comparison import compare
    from retrieval_gate.compare.gate import GateSettings
    from retrieval_gate.score.aggregate import aggregate, completeness
    from retrieval_gate.score.results import CaseResult, InputInfo, Results

    def results(ranks: np.ndarray) -> Results:
        cases = []
        for i, rank in enumerate(ranks.tolist()):
            inside = rank <= 5
            value = round(1 / math.log2(rank + 1), 6) if inside else 0.0
            cases.append(CaseResult(id=f"q{i:04d}", query="q", status="scored", gold=["g"], slices=["overall"],
                                    scores={"hit@5": float(inside), "recall@5": float(inside), "ndcg@5": value}))
        info = InputInfo(path="x", sha256="x", format="jsonl", count=n)
        return Results(tool_version="bench", suite="bench", k=[5], headline_k=5,
                       metrics=["hit@5", "recall@5", "ndcg@5"], config={},
                       inputs={"kb": info, "cases": info, "run": info},
                       completeness=completeness(cases), aggregates=aggregate(cases), cases=cases)

    def run(latent: np.ndarray) -> np.ndarray:
        moved = rng.random(n) < psi
        step = rng.choice([-2, -1, 1, 2], size=n)
        return np.maximum(1, latent + np.where(moved, step, 0))

    default = GateSettings(fail_on_regression=True)
    three = GateSettings(fail_on_regression=True, max_drop={"recall@5": 0.02, "ndcg@5": 0.02})
    alarms_one = alarms_three = 0
    for r in range(reps):
        latent = rng.geometric(0.35, n)
        base = update_baseline(baseline=None, results=results(run(latent)), sha="b", ref="main",
                               timestamp="2026-01-01T00:00:00Z")
        null = results(run(latent))
        one = compare(results=null, baseline=base, gate=default, seed=r, resamples=500)
        alarms_one += one.verdict == "fail"
        alarms_three += compare(results=null, baseline=base, gate=three, seed=r, resamples=500).verdict == "fail"
    return {"one": alarms_one / reps, "three": alarms_three / reps}


def judged_mde_check(rng: np.random.Generator, *, n: int, psi: float, reps: int) -> tuple[float | None, float]:
    """The judged row's MDE as the tool states it (one-sided at α, ``stats.power.mde``) for a
    binary cell with churn ψ, then the share of rows simulated at Δ = −MDE (the generator of the
    MDE check above) where the one-sided test detects the drop."""
    template = np.zeros(n)
    template[: round(psi * n)] = np.tile([-1.0, 1.0], n)[: round(psi * n)]
    size, _ = mde(n=n, diffs=template, binary=True, alpha=ALPHA, one_sided=True)
    if size is None:
        return None, float("nan")
    hits = 0
    for _ in range(reps):
        d, _ = binary_rows(rng, n, psi, -size)
        tests = sign_flip_tests(d, resamples=2000, seed=0)
        hits += tests.less[0] < ALPHA and d.mean() < 0
    return size, hits / reps


def gate_table(rng: np.random.Generator, reps: int) -> None:
    print("| n | churn ψ | false alarms, hit@5 judged alone | false alarms, 3 judged rows (Holm) |")
    print("|--:|--:|--:|--:|")
    for n in GATE_NS:
        for psi in GATE_CHURN:
            row = gate_cell(rng, n=n, psi=psi, reps=reps)
            print(f"| {n} | {psi:.0%} | {pct(row['one'])} | {pct(row['three'])} |", flush=True)
    print("\n| n | churn ψ | MDE of the judged row (one-sided) | the test detects at Δ = −MDE |")
    print("|--:|--:|--:|--:|")
    for n in GATE_NS:
        for psi in DISCORDANCE:
            size, rate = judged_mde_check(rng, n=n, psi=psi, reps=reps)
            print(f"| {n} | {psi:.0%} | {'–' if size is None else f'{size:.3f}'} | {pct(rate)} |", flush=True)


def pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400, help="simulated rows per cell")
    parser.add_argument("--title-reps", type=int, default=50, help="null comparisons per n for the titles")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gate", action="store_true", help="only the gate table (full comparisons)")
    parser.add_argument("--gate-reps", type=int, default=1000, help="comparisons per cell for the gate table")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    if args.gate:
        print(f"gate reps = {args.gate_reps} per cell, seed {args.seed}\n")
        gate_table(rng, args.gate_reps)
        print(f"\n{time.perf_counter() - start:.0f} s")
        return
    print(f"reps = {args.reps} per cell, title reps = {args.title_reps} per n, seed {args.seed}\n")
    print("| measure | n | discordance | Δ | coverage (tool) | coverage (reference) | p < 0.05 | regressed "
          "| CI extended to 0 | CI agrees with p |")
    print("|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for kind in ("binary", "continuous"):
        for n in NS:
            for psi in DISCORDANCE:
                for delta in DELTAS:
                    row = cell(rng, kind=kind, n=n, psi=psi, delta=delta, reps=args.reps)
                    print(f"| {kind} | {n} | {psi:.0%} | {delta:+.2f} | {pct(row['coverage'])} | "
                          f"{pct(row['reference'])} | {pct(row['p_below'])} | {pct(row['regressed'])} | "
                          f"{pct(row['extended'])} | {pct(row['agree'])} |", flush=True)
    print("\n| measure | n | discordance | MDE (tool) | detected at Δ = −MDE |")
    print("|:--|--:|--:|--:|--:|")
    for kind in ("binary", "continuous"):
        for n in NS:
            for psi in DISCORDANCE:
                size, rate = mde_check(rng, kind=kind, n=n, psi=psi, reps=args.reps)
                print(f"| {kind} | {n} | {psi:.0%} | {'–' if size is None else f'{size:.3f}'} | {pct(rate)} |",
                      flush=True)
    print("\n| n | rows | title calls nothing worse (null) | any row regressed at its own p (uncorrected) |")
    print("|--:|--:|--:|--:|")
    for n in NS:
        quiet, loud, rows = titles(rng, n=n, reps=args.title_reps)
        print(f"| {n} | {rows} | {pct(quiet)} | {pct(loud)} |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
