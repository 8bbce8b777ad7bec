"""Terminal tables (rich): colours on a TTY, plain text otherwise."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from retrieval_gate.metrics import parse_metric
from retrieval_gate.score.results import Results

HEADLINE_MEASURES = ("hit", "recall", "ndcg")


def results_table(results: Results) -> Table:
    k = results.headline_k
    names = [f"{m}@{k}" for m in HEADLINE_MEASURES if f"{m}@{k}" in results.metrics]
    table = Table(title=f"retrieval-gate · suite {results.suite} · k={k}", title_justify="left")
    table.add_column("slice")
    table.add_column("n", justify="right")
    for name in names:
        table.add_column(parse_metric(name).display, justify="right")
    for slice_name, cells in results.aggregates.items():
        n = max((cell.n for cell in cells.values()), default=0)
        row = [slice_name, str(n)]
        for name in names:
            cell = cells.get(name)
            row.append(f"{cell.value:.3f}" if cell else "–")
        if any(cell is not None for cell in (cells.get(n_) for n_ in names)):
            table.add_row(*row)
    return table


def completeness_line(results: Results) -> str:
    c = results.completeness
    line = (f"cases: {c.expected} expected · {c.scored} scored · {c.no_gold} no-gold · "
            f"{c.failed} failed")
    if c.unknown_run_ids:
        line += f" · {len(c.unknown_run_ids)} run ids not in the cases"
    return line


def print_results(results: Results, console: Console) -> None:
    console.print(results_table(results))
    console.print(completeness_line(results))
    if "recall" in {parse_metric(m).measure for m in results.metrics}:
        console.print("recall@k is a lower bound under disjunctive gold; hit@k is the success signal.",
                      style="dim")
    if results.latency is not None:
        lat = results.latency
        console.print(f"latency: p50 {lat.p50_ms:.1f} ms · p95 {lat.p95_ms:.1f} ms (n={lat.n})")
