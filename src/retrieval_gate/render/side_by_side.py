"""Several retrievers side by side (``compare.side_by_side``): a terminal table and Markdown.

One row per retriever's name, then one per metric: the value, then — for every row but the reference — the
paired Δ vs the reference with its CI and p-value. Numbers with 3 decimals, deltas signed.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

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
    """Long form (fits 80 columns): per retriever a row with its whole name (folded onto more lines
    when it is wider than the column, never cut), then one row per metric; per retriever a line of
    completeness and timing in the caption. The numbers never wrap: the name's column gives way."""
    level = round(sbs.stats.get("level", 0.95) * 100)
    title = f"retrievers side by side · suite {sbs.suite} · {sbs.slice} · paired Δ vs {sbs.reference}"
    table = Table(title=Text(title),  # Text: a name is never read as rich markup
                  title_justify="left", caption_justify="left",
                  caption=Text("\n".join(f"{row.retriever}: {row.scored} scored · {row.failed} failed · {_timing(row)}"
                                         for row in sbs.rows)))
    table.add_column("retriever / metric", justify="left", overflow="fold", min_width=12)
    for name in ("value", "n", "Δ", f"{level}% CI", "p"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in sbs.rows:
        is_ref = row.retriever == sbs.reference
        table.add_row(Text(row.retriever, style="bold"), "", "", "", "", "")
        for i, metric in enumerate(sbs.metrics):
            cell = row.cells[metric]
            table.add_row(
                "  " + parse_metric(metric).display, _value(cell), str(cell.n),
                "ref" if is_ref else str(signed(cell.delta)),
                "" if cell.ci is None else f"[{signed(cell.ci[0])}, {signed(cell.ci[1])}]",
                "" if cell.p_value is None else format_p(cell.p_value),
                end_section=i == len(sbs.metrics) - 1,
            )
    return table
