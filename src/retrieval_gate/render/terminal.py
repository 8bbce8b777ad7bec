"""Terminal tables (rich): colours on a TTY, plain text otherwise."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from retrieval_gate.baseline.fingerprint import settings_changes
from retrieval_gate.compare.changes import stale_words
from retrieval_gate.compare.gate import format_p
from retrieval_gate.compare.model import Comparison, gate_fails
from retrieval_gate.metrics import parse_metric
from retrieval_gate.metrics.names import display_name, headline_names
from retrieval_gate.render.cells import INDICATIVE_N, headline_metrics
from retrieval_gate.render.changes import NO_RANKINGS, cause_summary, change_line, gold_removed_words, kb_line
from retrieval_gate.render.escape import clean_text, escape_controls, escape_terminal
from retrieval_gate.render.failed_cases import failure_lines
from retrieval_gate.render.slices import slice_order, split_slice
from retrieval_gate.render.verdict import (
    DECISIVE_TOP_UP_COMMAND,
    TOP_UP_COMMAND,
    needs_labels_words,
    stats_note,
    unjudged_note,
)
from retrieval_gate.score.results import Results
from retrieval_gate.score.scoring import NO_ANSWER_SLICE, OVERALL


def _slice_sort_key(name: str) -> tuple[int, int, str, str]:
    """overall first, then kind, locale, form, hard class, tags, others; values alphabetically
    (results files store aggregates with sorted keys, so their order is not the display order)."""
    if name == OVERALL:
        return (0, 0, "", "")
    return (1, *slice_order(*split_slice(name)))


def results_table(results: Results) -> Table:
    """overall and every slice with its n and the headline metrics (the comment's: other measures
    when none of hit, recall, nDCG was measured); slices with n < 30 are dimmed and marked
    "indicative" (n < 30; colours only on a TTY: rich drops styles elsewhere)."""
    k = results.headline_k
    names = headline_metrics(results)
    table = Table(title=Text(escape_controls(f"retrieval-gate · suite {results.suite} · k={k}")), title_justify="left",
                  title_style="bold")
    table.add_column("slice", overflow="fold")
    table.add_column("n", justify="right")
    for name in names:
        table.add_column(parse_metric(name).display, justify="right")
    table.add_column("note", no_wrap=True)
    for slice_name in sorted(results.aggregates, key=_slice_sort_key):
        cells = results.aggregates[slice_name]
        if not any(cells.get(n_) is not None for n_ in names):
            continue
        lead = cells.get(names[0]) if names else None
        n = lead.n if lead is not None else max((cell.n for cell in cells.values()), default=0)
        row: list[Text | str] = [Text(escape_controls(slice_name)), str(n)]  # Text: user data is never rich markup
        for name in names:
            cell = cells.get(name)
            row.append(f"{cell.value:.3f}" if cell else "–")
        small = slice_name != OVERALL and n < INDICATIVE_N
        row.append("indicative" if small else "")
        table.add_row(*row, style="dim" if small else ("bold" if slice_name == OVERALL else None))
    return table


MEAN_WORDS = {"relevant": "cases with a relevant card (--mean relevant)",
              "trec": "judged cases in the run, as trec_eval (--mean trec)",
              "trec-c": "every judged case, as trec_eval -c (--mean trec-c)"}


def completeness_line(results: Results) -> str:
    c = results.completeness
    line = (f"cases: {c.expected} expected · {c.scored} scored · {c.no_gold} no-gold · "
            f"{c.failed} failed")
    if c.unknown_run_ids:
        line += f" · {len(c.unknown_run_ids)} run ids not in the cases"
    return line


def print_results(results: Results, console: Console) -> None:
    print_table(results_table(results), console)
    console.print(completeness_line(results))
    for line in failure_lines(results):  # why they failed, one line per reason (escaped: user text)
        console.print(Text(escape_terminal(line)), style="red", soft_wrap=True)
    if results.graded or results.relevance_level != 1 or results.mean != "relevant":
        gains = "graded gains (nDCG gain = grade)" if results.graded else "binary gains"
        console.print(f"relevance: grade ≥ {results.relevance_level} is relevant · {gains} · mean over "
                      f"{MEAN_WORDS[results.mean]}", markup=False, soft_wrap=True)
    if "recall" in {parse_metric(m).measure for m in results.metrics}:
        console.print("recall@k is a lower bound under disjunctive gold; hit@k is the success signal.",
                      style="dim")
    abstention = results.aggregates.get(NO_ANSWER_SLICE, {}).get("abstention")
    if abstention is not None:
        console.print(f"no-answer: abstention {abstention.value:.3f} (n={abstention.n})")
    if results.latency is not None:
        lat = results.latency
        console.print(f"latency: p50 {lat.p50_ms:.1f} ms · p95 {lat.p95_ms:.1f} ms (n={lat.n})")


# --- comparison with a baseline (compare command) --------------------------------------------

_STATUS_STYLE = {"regressed": "bold red", "below_floor": "bold red", "improved": "green",
                 "inconclusive": "yellow", "underpowered": "yellow", "new": "cyan", "missing": "magenta", "ok": "",
                 "unchanged": "dim"}
_CHANGE_LINES = 10
_LOG_WIDTH = 120
_UNBOUNDED = 100_000  # the width a table is measured at when it goes to a pipe or a file


def print_table(table: Table, console: Console) -> None:
    """On a terminal, fitted to its width; to a pipe or a file (logs have no width), every cell
    whole — a slice name is never broken mid-word — however wide the table gets."""
    if console.is_terminal:
        console.print(table, crop=True)
        return
    options = console.options.update(width=_UNBOUNDED)
    table.width = max(Measurement.get(console, options, table).maximum, min(console.width, _LOG_WIDTH))
    console.print(table, crop=False, width=table.width)


def _signed(value: float | None) -> str:
    if value is None:
        return "–"
    text = f"{abs(value):.3f}"
    return "±" + text if float(text) == 0 else ("+" if value > 0 else "−") + text


def _fixed(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def comparison_table(comparison: Comparison, *, all_rows: bool = False) -> tuple[Table, int]:
    """The rows worth a glance — hit/recall/nDCG at the headline k on every slice, every row the
    gate judges, every row below a floor — or all rows; and how many were left out."""
    k = comparison.headline_k
    headline = set(headline_names(k))
    title = Text(escape_controls(f"retrieval-gate compare · suite {comparison.suite} · k={k}"))
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("slice", overflow="fold")
    table.add_column("metric", no_wrap=True)
    for name in ("baseline", "current", "Δ", "CI", "p", "n", "MDE"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    shown = [row for row in comparison.rows
             if all_rows or row.gated or row.metric in headline or row.status == "below_floor"]
    for i, row in enumerate(shown):
        first = i == 0 or shown[i - 1].slice != row.slice
        last = i == len(shown) - 1 or shown[i + 1].slice != row.slice
        ci = "–" if row.ci is None else f"{_signed(row.ci[0])}…{_signed(row.ci[1])}"
        if row.ci_agrees is False:
            ci += " ‡"
        status = row.status.replace("_", " ") + (" *" if row.gated else "")
        if row.n_needed is not None:
            status += f" (needs n≈{row.n_needed:,})"
        p = format_p(row.p_adjusted if row.p_adjusted is not None else row.p_value)
        table.add_row(Text(escape_controls(row.slice)) if first else "", display_name(row.metric), _fixed(row.baseline),
                      _fixed(row.current), _signed(row.delta), ci, p, str(row.n), _fixed(row.mde), status,
                      style=_STATUS_STYLE.get(row.status, ""), end_section=last)
    return table, len(comparison.rows) - len(shown)


def print_comparison(comparison: Comparison, console: Console, *, all_rows: bool = False,
                     top_up: tuple[str, str] | None = None) -> None:
    """Verdict, what changed in the set-up, the table, lost/gained hits, the gate's reasons."""
    base = comparison.baseline_sha[:7] if comparison.baseline_sha else "from a local run (no commit recorded)"
    when = f" ({comparison.baseline_updated_at[:10]})" if comparison.baseline_updated_at else ""
    console.print(f"baseline {base}{' on ' + comparison.baseline_ref if comparison.baseline_ref else ''}{when}"
                  f" · {comparison.n_paired} cases paired · {len(comparison.cases_added)} added · "
                  f"{len(comparison.cases_removed)} removed", markup=False, soft_wrap=True)
    if not comparison.like_for_like:
        console.print("not like-for-like: the configuration changed since the baseline", style="bold yellow")
        for change in settings_changes(comparison.config_changes):
            console.print(escape_controls(f"  {change.key}: {change.baseline!r} → {change.current!r}"), markup=False,
                          soft_wrap=True)
    table, hidden = comparison_table(comparison, all_rows=all_rows)
    # Logs and files have no width: do not squeeze the table into rich's 80-column default there.
    print_table(table, console)
    notes = "* judged by the gate. Δ: paired mean difference over the n cases in both runs; "
    notes += stats_note(comparison.stats)
    if hidden:
        notes += f" {hidden} more rows (other metrics): --all, or the comparison JSON."
    console.print(notes, style="dim", markup=False, soft_wrap=True)
    print_changes(comparison, console)
    for reason in comparison.failures:
        console.print(f"gate: {escape_controls(reason)}", style="bold red", markup=False, soft_wrap=True)
    gate_on = comparison.gate.fail_on_regression or comparison.gate.floors
    verdict = comparison.verdict.upper()
    if comparison.verdict == "pass" and comparison.regressed and not gate_on:
        verdict += " (regressed, report only: no gate is on)"
    elif comparison.verdict == "pass" and not gate_on:
        verdict += " (report only: no gate is on)"
    if comparison.verdict == "needs-labels":
        command = top_up[1] if top_up else DECISIVE_TOP_UP_COMMAND
        verdict += f" — {needs_labels_words(comparison)}; label them: {command}"
        if comparison.gate.unjudged == "warn":
            verdict += " (gate.unjudged: warn, so it passes)"
    elif comparison.unjudged_note:
        command = top_up[0] if top_up else TOP_UP_COMMAND
        console.print(f"labels: {unjudged_note(comparison)} ({command})", style="yellow", markup=False,
                      soft_wrap=True)
    if comparison.not_cards:
        shown = ", ".join(escape_controls(c) for c in comparison.not_cards[:NOT_CARDS_SHOWN])
        hidden = len(comparison.not_cards) - NOT_CARDS_SHOWN
        more = f" and {hidden:,} more" if hidden > 0 else ""
        console.print(f"not cards: {len(comparison.not_cards):,} ranked id(s) name no card of the KB ({shown}{more}): "
                      "read as not relevant, never asked for", style="yellow", markup=False, soft_wrap=True)
    if comparison.gold_removed:
        console.print(f"gold: {gold_removed_words(len(comparison.gold_removed))}", style="bold red", markup=False,
                      soft_wrap=True)
    console.print(f"verdict: {verdict}", style="bold red" if gate_fails(comparison) else "bold",
                  markup=False, soft_wrap=True)


NOT_CARDS_SHOWN = 5  # ids that are not cards, named in the terminal (the comparison JSON has them all)
QUESTION_CHARS = 60  # a case's question beside its id, shortened (the comparison JSON has it whole)


def print_changes(comparison: Comparison, console: Console) -> None:
    """What changed and why: the counts per cause, the KB's card diff, one line per changed case
    (worse first), at most ``_CHANGE_LINES`` per direction."""
    changes = comparison.changed_cases
    diff = comparison.kb_changes
    kb = kb_line(diff) if diff is not None and (diff.added or diff.removed or diff.edited) else ""
    if not changes and not kb:
        return
    console.print(f"what changed: {len(changes)} case(s) moved · {cause_summary(changes)}", style="bold",
                  markup=False, soft_wrap=True)
    if comparison.stale_gold_cards:
        console.print(stale_words(len(comparison.stale_gold_cards)), style="bold yellow", markup=False, soft_wrap=True)
    if kb:
        console.print(f"  KB: {escape_controls(kb)}", markup=False, soft_wrap=True)
    if not comparison.baseline_rankings:
        console.print(f"  {NO_RANKINGS}", style="dim", markup=False, soft_wrap=True)
    for label, movements in (("worse", ("lost-hit", "worse")), ("better", ("better", "gained-hit"))):
        group = [c for c in changes if c.movement in movements]
        for change in group[:_CHANGE_LINES]:
            line = change_line(change, rankings=comparison.baseline_rankings)
            mark = {"lost-hit": "lost hit", "gained-hit": "gained hit"}.get(change.movement, label)
            question = f' "{clean_text(escape_controls(change.query), max_len=QUESTION_CHARS)}"' if change.query else ""
            console.print(f"  {escape_controls(change.id)}{question} [{mark}] {escape_controls(line.text)}",
                          markup=False, soft_wrap=True)
        if len(group) > _CHANGE_LINES:
            console.print(f"  … and {len(group) - _CHANGE_LINES} more {label} (the comparison JSON has all)",
                          markup=False)
