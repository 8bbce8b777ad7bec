"""Comparison speed: ``compare`` on 10,000 paired cases (bootstrap 10k resamples + sign-flip 10k).

Data: a synthetic golden set scored with the package's own metric functions (hit, recall, nDCG,
MRR, precision, MAP at k = 1, 3, 5, 10 — 24 metrics), four slices per case (overall, kind,
locale, form; 7 slices in all). The "current" run is the baseline system with a share of the
cases re-ranked (``--changed``, default 30%) — a typical PR — and, as the worst case, with every
case re-ranked. Timed, in one process, best of ``--repeat``:

- ``compare()``: every metric × slice row (168 rows) with its sign-flip p-value and the interval
  that inverts it, lost/gained hits, config diff, gate, read as a pooled set: the condensed
  reading (both sides rescored without their unjudged cards, the gate run again: each case keeps
  its top 10, as a results file does) and the gate under the extreme labellings of the unjudged
  cards (``compare.decisive``; with the decisive cards and the first sitting when they disagree)
  — what ``retrieval-gate compare`` does after reading the files;
- one metric (nDCG@10, overall) alone: our bootstrap CI and our sign-flip p-value, side by side
  with ``scipy.stats.bootstrap`` (percentile, vectorised) and ``scipy.stats.permutation_test``
  (paired sign flips) with the same number of resamples;
- writing and reading the baseline file (and its size).

Run: ``python benchmarks/bench_compare.py [--cases 10000] [--resamples 10000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

from retrieval_gate.artifacts.baseline import read_baseline, write_baseline
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.changes import attach_changes
from retrieval_gate.compare.comparison import _judge, compare, with_readings
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.metrics import metric_specs
from retrieval_gate.score.aggregate import aggregate, completeness
from retrieval_gate.score.results import CaseResult, Results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.reference
from tests.reference import case_scores, paired_bootstrap_ci, sign_flip_p_value

KS = (1, 3, 5, 10)
GRID = metric_specs(KS)
LOCALES = ("en-US", "pt-BR")


def ranking(rng: np.random.Generator, gold: list[str], quality: float) -> list[str]:
    """Gold cards placed at geometric ranks (better system = higher ``quality``), filler elsewhere."""
    ranked = [f"filler{j}" for j in range(20)]
    for card in gold:
        pos = min(int(rng.geometric(quality)) - 1, 30)
        ranked.insert(pos, card)
    return ranked


def make_results(n: int, *, seed: int, changed: float, base_seed: int = 1) -> tuple[Results, Results]:
    base_rng, rng = np.random.default_rng(base_seed), np.random.default_rng(seed)
    before, after = [], []
    for i in range(n):
        gold = [f"card{i}-{g}" for g in range(1 + int(base_rng.integers(0, 3)))]
        slices = ["overall", "kind=golden", f"locale={LOCALES[i % 2]}", f"form={'GAP' if i % 3 == 0 else 'MATCH'}"]
        old = ranking(base_rng, gold, 0.35)
        new = ranking(rng, gold, 0.33) if rng.random() < changed else old
        for runs, ranked in ((before, old), (after, new)):
            runs.append(CaseResult(id=f"q{i:05d}", query=f"question {i}", gold=gold, slices=slices,
                                   scores=case_scores(ranked, gold, GRID), retrieved=ranked[:max(KS)]))
    return tuple(  # type: ignore[return-value]
        Results(tool_version="bench", k=list(KS), headline_k=5, metrics=[m.name for m in GRID],
                completeness=completeness(cases), aggregates=aggregate(cases), cases=cases)
        for cases in (before, after))


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--changed", type=float, default=0.3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"python {platform.python_version()} · numpy {np.__version__} · {platform.machine()} · "
          f"{args.cases} cases · {len(GRID)} metrics · {args.resamples} resamples · best of {args.repeat}")

    gate = GateSettings(fail_on_regression=True)
    for label, changed in ((f"{args.changed:.0%} of cases re-ranked", args.changed), ("every case re-ranked", 1.0)):
        before, after = make_results(args.cases, seed=7, changed=changed)
        baseline = update_baseline(baseline=None, results=before, sha="bench", ref="main", timestamp=None)
        # read as a pooled set (the heavier path: the condensed reading and the extreme labellings)
        result = compare(results=after, baseline=baseline, gate=gate, resamples=args.resamples, judgements="pooled")
        seconds = best(lambda a=after, b=baseline: compare(results=a, baseline=b, gate=gate, resamples=args.resamples,
                                                          judgements="pooled"), args.repeat)
        print(f"compare(), {label}: {seconds:.2f} s for {len(result.rows)} rows "
              f"({1000 * seconds / len(result.rows):.1f} ms/row); verdict {result.verdict}, "
              f"{len(result.lost_hits)} lost / {len(result.gained_hits)} gained hits; condensed reading "
              f"{result.condensed.verdict if result.condensed else 'none'}, judged@5 "
              f"{result.judged['overall']['judged@5'].current:.3f}; needs_labels "
              f"{result.needs_labels.model_dump() if result.needs_labels else None}")

    before, after = make_results(args.cases, seed=7, changed=args.changed)
    baseline = update_baseline(baseline=None, results=before, sha="bench", ref="main", timestamp=None)
    standard = attach_changes(_judge(results=after, baseline=baseline, gate=gate, seed=0, resamples=args.resamples),
                              results=after, baseline=baseline, kb_before=None)
    alone = best(lambda: attach_changes(_judge(results=after, baseline=baseline, gate=gate, seed=0,
                                               resamples=args.resamples),
                                        results=after, baseline=baseline, kb_before=None), args.repeat)
    readings = best(lambda: with_readings(standard, results=after, baseline=baseline, gate=gate,
                                          resamples=args.resamples), args.repeat)
    print(f"compare(), {args.changed:.0%} re-ranked: the standard reading alone {alone:.2f} s; judged@k, the "
          f"condensed reading with its gate and the extreme labellings (pooled) add {readings:.2f} s")

    before, after = make_results(args.cases, seed=7, changed=1.0)
    ids = [c.id for c in after.cases]
    old = {c.id: c.scores["ndcg@10"] for c in before.cases}
    diffs = np.array([round(c.scores["ndcg@10"], 6) - round(old[c.id], 6) for c in after.cases])
    print(f"one metric (nDCG@10, overall, every case re-ranked, {len(np.unique(diffs))} distinct differences):")
    ours_ci = best(lambda: paired_bootstrap_ci(diffs, resamples=args.resamples), args.repeat)
    scipy_ci = best(lambda: scipy_stats.bootstrap((diffs,), np.mean, n_resamples=args.resamples, method="percentile",
                                                  vectorized=True, random_state=0), args.repeat)
    ours_p = best(lambda: sign_flip_p_value(diffs, resamples=args.resamples), args.repeat)
    scipy_p = best(lambda: scipy_stats.permutation_test((diffs,), np.mean, permutation_type="samples",
                                                        n_resamples=args.resamples, vectorized=True,
                                                        random_state=0), args.repeat)
    low, high = paired_bootstrap_ci(diffs, resamples=args.resamples)
    ref = scipy_stats.bootstrap((diffs,), np.mean, n_resamples=args.resamples, method="percentile",
                                vectorized=True, random_state=0).confidence_interval
    print(f"  bootstrap CI   ours {ours_ci:.2f} s [{low:+.4f}, {high:+.4f}] · "
          f"scipy.stats.bootstrap {scipy_ci:.2f} s [{ref.low:+.4f}, {ref.high:+.4f}]")
    p_ours = sign_flip_p_value(diffs, resamples=args.resamples)
    p_ref = scipy_stats.permutation_test((diffs,), np.mean, permutation_type="samples", n_resamples=args.resamples,
                                         vectorized=True, random_state=0).pvalue
    print(f"  sign-flip p    ours {ours_p:.2f} s p={p_ours:.4f} · scipy.stats.permutation_test {scipy_p:.2f} s "
          f"p={p_ref:.4f}")

    baseline = update_baseline(baseline=None, results=before, sha="bench", ref="main", timestamp=None)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "default.json"
        write_s = best(lambda: write_baseline(path, baseline), args.repeat)
        read_s = best(lambda: read_baseline(path), args.repeat)
        size = path.stat().st_size
    print(f"baseline file: {size / 1e6:.2f} MB for {len(ids)} cases × {len(GRID)} metrics "
          f"({size / len(ids):.0f} B/case); write {write_s:.2f} s, read {read_s:.2f} s")


if __name__ == "__main__":
    main()
