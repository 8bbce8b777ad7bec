"""Report rendering: size and time of the PR comment, the job summary and the HTML report, side by
side, as the suite grows (cases × slices), with a baseline, its history and a comparison.

Inputs come from ``tests/golden/scenarios.py`` (real scoring pipeline; the comparison is built
there by hand, so this times rendering only, not ``compare``). Best of ``--repeat``. Run from the
repository root: ``python benchmarks/bench_reports.py [--sizes 100,1000,3000,10000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.golden import scenarios as sc

from retrieval_gate.render.html import render_html
from retrieval_gate.render.markdown import render_comment, render_summary


def build(n: int) -> sc.Scenario:
    tags = max(3, n // 75)  # ~75 cases per tag value: dozens of slices at thousands of cases
    cases = sc.make_cases(n, tag_values=min(tags, 40), locales=tuple(f"l{i}" for i in range(12)),
                          hard_classes=("normal", "near-duplicate", "prose-free", "boilerplate", "specific"),
                          query_fn=lambda i: f"a realistic question number {i} about subsystem {i % 97} "
                          "and how it interacts with the retrieval layer")
    base = sc.scored_results(cases, sc.make_rankings(cases, quality=0.75, seed=9))
    cur = sc.scored_results(cases, sc.make_rankings(cases, quality=0.7, seed=10))
    baseline = sc.make_baseline(base, history=tuple(0.6 + 0.005 * i for i in range(30)))
    return sc.Scenario(f"n{n}", cur, sc.make_comparison(base, cur), baseline, sc.LINKS)


def best(fn, repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,3000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"python {platform.python_version()} · {platform.machine()} · best of {args.repeat}")
    print(f"{'cases':>6} {'slices':>6} {'lost':>5} | {'comment ms':>10} {'chars':>7} {'cut':>28} | "
          f"{'summary ms':>10} {'chars':>9} | {'html ms':>8} {'bytes':>10}")
    for n in (int(s) for s in args.sizes.split(",")):
        s = build(n)
        kw = {"results": s.results, "comparison": s.comparison, "baseline": s.baseline}
        t_c, comment = best(lambda kw=kw, s=s: render_comment(**kw, links=s.links), args.repeat)
        t_s, summary = best(lambda kw=kw, s=s: render_summary(**kw, links=s.links), args.repeat)
        t_h, html = best(lambda kw=kw: render_html(**kw), args.repeat)
        notice = next((ln for ln in comment.splitlines() if "✂️" in ln), "")
        cut = notice.split(": ", 1)[1].split(" shown")[0][:28] if notice else "nothing"
        n_slices = len(s.results.aggregates) - 1
        print(f"{n:>6} {n_slices:>6} {len(s.comparison.lost_hits):>5} | {t_c * 1000:>10.0f} {len(comment):>7,} "
              f"{cut:>28} | {t_s * 1000:>10.0f} {len(summary):>9,} | {t_h * 1000:>8.0f} "
              f"{len(html.encode()):>10,}")


if __name__ == "__main__":
    main()
