"""Several retrievers side by side (``compare.side_by_side``): a terminal table and Markdown.

One row per retriever; per metric the value, then — for every row but the reference — the
paired Δ vs the reference with its CI and p-value. Numbers with 3 decimals, deltas signed.
"""

from __future__ import annotations

from rich.table import Table

from retrieval_gate.compare.gate import format_p
from retrieval_gate.compare.side_by_side import RetrieverCell, RetrieverRow, SideBySide
from retrieval_gate.metrics import parse_metric
from retrieval_gate.render.fmt import signed


def _value(cell: RetrieverCell) -> str:
    return "–" if cell.value is None else f"{cell.value:.3f}"


def _timing(row: RetrieverRow) -> str:
    parts = []
    if row.search_s is not None:
        parts.append(f"{row.search_s:.1f} s")
    if row.latency_p50_ms is not None:
        parts.append(f"p50 {row.latency_p50_ms:.1f} ms")
    return " · ".join(parts) or "–"


def side_by_side_table(sbs: SideBySide) -> Table:
    """Long form (fits 80 columns): one row per retriever × metric, then per retriever a line of
    completeness and timing in the caption."""
    level = round(sbs.stats.get("level", 0.95) * 100)
    table = Table(title=f"retrievers side by side · suite {sbs.suite} · {sbs.slice} · paired Δ vs {sbs.reference}",
                  title_justify="left", caption_justify="left",
                  caption="\n".join(f"{row.retriever}: {row.scored} scored · {row.failed} failed · {_timing(row)}"
                                    for row in sbs.rows))
    for name, justify in (("retriever", "left"), ("metric", "left"), ("value", "right"), ("n", "right"),
                          ("Δ", "right"), (f"{level}% CI", "right"), ("p", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in sbs.rows:
        for i, metric in enumerate(sbs.metrics):
            cell = row.cells[metric]
            is_ref = row.retriever == sbs.reference
            table.add_row(
                row.retriever if i == 0 else "", parse_metric(metric).display, _value(cell), str(cell.n),
                "ref" if is_ref else str(signed(cell.delta)),
                "" if cell.ci is None else f"[{signed(cell.ci[0])}, {signed(cell.ci[1])}]",
                "" if cell.p_value is None else format_p(cell.p_value),
                end_section=i == len(sbs.metrics) - 1,
            )
    return table


