"""The HTML report's per-case drill-down of what changed: for each changed case, the baseline's
ranking and this run's side by side (gold cards highlighted, cards this run's KB added or edited
marked), its cause and slices (for the report's filters), and a histogram of gold-rank shifts.
Pure; the template escapes every value."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from retrieval_gate.compare.changes_model import CAUSES, ChangedCase
from retrieval_gate.compare.model import Baseline, Comparison
from retrieval_gate.render.changes import CAUSE_WORDS, NO_RANKINGS, change_line, kb_line
from retrieval_gate.score.results import Results
from retrieval_gate.score.scoring import OVERALL

DRILL_MAX = 500  # changed cases drawn in the report, most harmful first (all are in comparison.json)
GONE, CAME = "left the top", "entered the top"  # a gold card that left / entered the stored ranking


@dataclass(frozen=True)
class RankedCard:
    rank: int
    card: str
    gold: bool
    kb_change: str  # "added" | "edited" | "" (unchanged or unknown)

    @property
    def css(self) -> str:
        return " ".join(([] if not self.gold else ["hit"]) + ([f"kb-{self.kb_change}"] if self.kb_change else []))


@dataclass(frozen=True)
class DrillCase:
    id: str
    query: str
    cause: str
    cause_words: str
    movement: str
    slices: list[str]
    line: str  # the one-line summary (render.changes)
    before: list[RankedCard]
    after: list[RankedCard]


def _marks(comparison: Comparison) -> dict[str, str]:
    kb = comparison.kb_changes
    if kb is None:
        return {}
    return {**{c.card: "added" for c in kb.added}, **{c.card: "edited" for c in kb.edited}}


def _side(cards: list[str], gold: set[str], marks: dict[str, str]) -> list[RankedCard]:
    return [RankedCard(rank=i, card=c, gold=c in gold, kb_change=marks.get(c, "")) for i, c in enumerate(cards, 1)]


def shift_buckets(changes: list[ChangedCase]) -> list[tuple[str, int]]:
    """Gold-rank shifts (after − before; negative = moved up), one per gold card that moved,
    with the cards that left or entered the stored ranking counted apart; in display order."""
    counts: Counter[str] = Counter()
    for change in changes:
        for gold in change.gold:
            if gold.rank_before == gold.rank_after:
                continue
            if gold.rank_after is None:
                counts[GONE] += 1
            elif gold.rank_before is None:
                counts[CAME] += 1
            else:
                counts[f"{gold.rank_after - gold.rank_before:+d}"] += 1
    numeric = sorted((k for k in counts if k not in (GONE, CAME)), key=int)
    order = [CAME, *numeric, GONE]
    return [(k, counts[k]) for k in order if counts[k]]


def histogram_svg(buckets: list[tuple[str, int]]) -> Markup:
    """Bars of the gold-rank shifts, labelled; empty when nothing moved."""
    if not buckets:
        return Markup("")
    width, height, bar = max(320, 44 * len(buckets) + 20), 160, 34
    top = max(n for _, n in buckets)
    parts = [f'<svg class="chart shifts" role="img" aria-label="gold-rank shifts" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}">']
    for i, (label, n) in enumerate(buckets):
        h = round(100 * n / top)
        x = 10 + 44 * i
        colour = "#cf222e" if label == GONE or (label.startswith("+")) else "#1a7f37"
        parts.append(f'<rect class="shift" x="{x}" y="{120 - h}" width="{bar}" height="{h}" fill="{colour}"><title>'
                     f'{escape(label)}: {n}</title></rect>')
        parts.append(f'<text x="{x + bar / 2}" y="{115 - h}" font-size="11" text-anchor="middle">{n}</text>')
        short = "out" if label == GONE else "in" if label == CAME else label
        parts.append(f'<text x="{x + bar / 2}" y="136" font-size="11" text-anchor="middle">{escape(short)}</text>')
    parts.append('<text x="10" y="154" font-size="11" fill="#59636e">rank after − before per gold card '
                 '(− moved up); in / out: entered / left the stored ranking</text></svg>')
    return Markup("".join(parts))


def drilldown(*, comparison: Comparison | None, results: Results, baseline: Baseline | None) -> dict[str, Any]:
    """The drill-down's data (``shown`` False when there is no comparison or nothing changed)."""
    if comparison is None or not comparison.changed_cases:
        return {"shown": False}
    marks = _marks(comparison)
    current = {c.id: c for c in results.cases}
    cases = []
    for change in comparison.changed_cases[:DRILL_MAX]:
        gold = {g.card for g in change.gold}
        before = baseline.cases[change.id].ranked if baseline is not None and change.id in baseline.cases else []
        cases.append(DrillCase(
            id=change.id, query=change.query, cause=change.cause, cause_words=CAUSE_WORDS[change.cause],
            movement=change.movement, slices=[s for s in change.slices if s != OVERALL],
            line=change_line(change, rankings=comparison.baseline_rankings).text,
            before=_side(list(before), gold, marks), after=_side(list(current[change.id].retrieved), gold, marks)))
    causes = [c for c in CAUSES if any(x.cause == c for x in cases)]
    kb = comparison.kb_changes
    slices = sorted({s for c in cases for s in c.slices})
    return {"shown": True, "cases": cases, "causes": [(c, CAUSE_WORDS[c]) for c in causes], "slices": slices,
            "histogram": histogram_svg(shift_buckets(comparison.changed_cases)),
            "no_rankings": "" if comparison.baseline_rankings else NO_RANKINGS,
            "total": len(comparison.changed_cases),
            "kb": kb_line(kb) if kb is not None and (kb.added or kb.removed or kb.edited) else ""}
