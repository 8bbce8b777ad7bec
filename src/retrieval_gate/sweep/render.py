"""``sweep.json`` → Markdown (a job summary) and the rows of the terminal table (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def settings_text(settings: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (settings or {}).items()) or "-"


def _num(value: float | None, places: int = 4, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{places}f}" if signed else f"{value:.{places}f}"


def table_rows(sweep: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and one row per point: settings, the metric, Δ vs the reference with its interval and
    Holm-corrected p, then the cost (``cut``: chunks longer than the model's limit)."""
    metric = sweep["metric"]
    level = f"{1 - sweep['stats']['alpha']:.0%}"
    header = ["settings", metric, "Δ vs reference", f"interval ({level}, uncorrected)", "p (Holm)", "chunks", "cut",
              "embedded (cold run)", "seconds"]
    rows = []
    for point in sweep["points"]:
        vs = point["vs_reference"].get(metric)
        name = settings_text(point["settings"]) + (" (reference)" if point["reference"] else "")
        if point["settings"] == sweep.get("winner"):
            name += " (winner)"
        rows.append([
            name, _num(point["metrics"].get(metric)),
            _num(vs["delta"], signed=True) if vs else "-",
            f"[{vs['ci'][0]:+.4f}, {vs['ci'][1]:+.4f}]" if vs else "-",
            f"{vs.get('p_holm', vs['p']):.4f}" if vs else "-",
            str(point["cost"]["chunks"]),
            str(point["truncated"]["chunks"]) if point.get("truncated") else "-", str(point["cost"]["embedded"]),
            f"{point['cost']['seconds']:.1f}",
        ])
    return header, rows


def terminal_table(sweep: Mapping[str, Any]) -> str:
    """The points as a plain, aligned text table (a CI log keeps every column whole)."""
    header, rows = table_rows(sweep)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths,
                                                                                                   strict=True)))
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def verdict_lines(sweep: Mapping[str, Any]) -> list[str]:
    split = sweep["split"]
    lines = []
    best = settings_text(sweep["selection"]["best"])
    tie = sweep["selection"].get("tie")
    if tie and sweep["verdict"] != "confirmed":
        lines.append(f"Verdict: no clear winner. {len(tie['points'])} points tie on the {split['selection']} "
                     f"selection cases ({sweep['metric']} {_num(tie['mean'])}): "
                     + "; ".join(settings_text(s) for s in tie["points"])
                     + f". The tie was broken by {tie['broken_by']}: {best}"
                     + (" (the current settings)." if sweep["selection"]["best_is_reference"] else "."))
    elif sweep["verdict"] == "confirmed":
        lines.append(f"Verdict: confirmed. {best} beats the reference and every other finalist on the "
                     f"{split['confirmation']} confirmation cases (chosen on the other {split['selection']}).")
    elif sweep["selection"]["best_is_reference"]:
        lines.append(f"Verdict: no clear winner. The current settings were the best on the {split['selection']} "
                     "selection cases.")
    else:
        lines.append(f"Verdict: no clear winner. {best} was best on the {split['selection']} selection cases but "
                     f"did not beat every finalist on the {split['confirmation']} confirmation cases.")
        for rival in sweep["closest_rivals"]:
            if "delta" in rival:
                lines.append(f"  closest rival: {settings_text(rival['settings'])}"
                             f"{' (reference)' if rival['reference'] else ''}: best − rival {rival['delta']:+.4f} "
                             f"[{rival['ci'][0]:+.4f}, {rival['ci'][1]:+.4f}] (uncorrected), "
                             f"p (Holm) {rival['p_holm']:.4f}")
    for warning in sweep.get("warnings", []):
        lines.append(f"Warning: {warning['text']}.")
    for axis, value in sweep["knee"].items():
        curve = sweep["curves"][axis]
        if value is None:
            lines.append(f"Knee of {axis}: {curve.get('knee_note') or 'none'} (best {curve['best']}; other keys held "
                         f"at {settings_text(curve['held'])})")
            continue
        lines.append(f"Knee of {axis}: {value} (the cheapest value — fewest chunks — whose interval against the best, "
                     f"{curve['best']}, includes 0; other keys held at {settings_text(curve['held'])})")
    if sweep.get("pareto"):
        lines.append("Pareto front (higher metric, fewer chunks): "
                     + "; ".join(settings_text(s) for s in sweep["pareto"]))
    best = sweep["selection"]["best"]
    for point in sweep["points"]:
        if point["settings"] != best:
            continue
        for lost in point["slices_lost"]:
            lines.append(f"{settings_text(point['settings'])} wins overall but loses slice {lost['slice']}: "
                         f"Δ {lost['delta']:+.4f} over {lost['n']} cases")
    return lines


def markdown(sweep: Mapping[str, Any]) -> str:
    header, rows = table_rows(sweep)
    out = [f"## Sweep of suite `{sweep['suite']}` ({sweep['metric']})", ""]
    lines = verdict_lines(sweep)
    out += [f"**{lines[0]}**", ""] + [f"- {line.strip()}" for line in lines[1:]]
    out += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    for axis, curve in sweep["curves"].items():
        out += ["", f"### {axis}", "", f"| {axis} | {sweep['metric']} | Δ vs best | chunks | embedded (its own index, "
                                       "cold) | seconds |",
                "|---|---|---|---|---|---|"]
        for item in curve["points"]:
            vs = item["vs_best"]
            mark = " (knee)" if item["value"] == sweep["knee"].get(axis) else ""
            out.append(f"| {item['value']}{mark} | {_num(item['metric'])} | "
                       f"{'best' if vs is None else _num(vs['delta'], signed=True)} | {item['cost']['chunks']} | "
                       f"{item['cost']['embedded']} | {item['cost']['seconds']:.1f} |")
    return "\n".join(out) + "\n"
