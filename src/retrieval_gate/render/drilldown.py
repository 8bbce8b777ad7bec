"""The HTML report's per-case drill-down of what changed: for each changed case, the baseline's
ranking and this run's side by side (gold cards highlighted, cards this run's KB added or edited
marked), its cause and slices (for the report's filters), and a histogram of gold-rank shifts.
Pure; the template escapes every value."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.compare.changes_model import CAUSES, ChangedCase
from retrieval_gate.compare.model import Comparison
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


SHIFT_UP, SHIFT_DOWN = "#0072B2", "#D55E00"  # Okabe–Ito blue / vermillion: apart under every colour-blindness
HIST_PLOT_H, HIST_BAR, HIST_STEP, HIST_LEFT = 110, 30, 42, 44


def _count_ticks(top: int) -> list[int]:
    """0, the top and at most two round counts between them."""
    step = max(1, -(-top // 3))
    return sorted({*range(0, top + 1, step), top})


def histogram_svg(buckets: list[tuple[str, int]]) -> Markup:
    """Bars of the gold-rank shifts with a count axis, each bar's count over it and its shift
    under it; empty when nothing moved. The caption is the figure's, outside the SVG."""
    if not buckets:
        return Markup("")
    top = max(n for _, n in buckets)
    y0, plot_top = 14 + HIST_PLOT_H, 14
    width = HIST_LEFT + HIST_STEP * len(buckets) + 12
    height = y0 + 34
    parts = [f'<svg class="chart shifts" role="img" aria-label="gold-rank shifts" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}"><title>gold-rank shifts (cards per shift)</title>']
    for tick in _count_ticks(top):
        y = y0 - HIST_PLOT_H * tick / top
        parts.append(f'<line x1="{HIST_LEFT - 4}" x2="{width - 8}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                     f'<text x="{HIST_LEFT - 8}" y="{y + 4:.1f}" class="tick" text-anchor="end">{tick}</text>')
    parts.append(f'<line x1="{HIST_LEFT - 4}" x2="{width - 8}" y1="{y0}" y2="{y0}" class="zero"/>')
    for i, (label, n) in enumerate(buckets):
        h = HIST_PLOT_H * n / top
        x = HIST_LEFT + HIST_STEP * i + (HIST_STEP - HIST_BAR) / 2
        worse = label == GONE or label.startswith("+")
        cls = "shift worse" if worse else "shift better"
        parts.append(f'<rect class="{cls}" x="{x:.1f}" y="{y0 - h:.1f}" width="{HIST_BAR}" height="{h:.1f}" '
                     f'fill="{SHIFT_DOWN if worse else SHIFT_UP}"><title>{escape(label)}: {n}</title></rect>')
        count_y = max(y0 - h - 4, plot_top - 2) if h < HIST_PLOT_H - 2 else y0 - h + 13
        count_cls = "value" if h < HIST_PLOT_H - 2 else "value inside"
        parts.append(f'<text x="{x + HIST_BAR / 2:.1f}" y="{count_y:.1f}" class="{count_cls}" '
                     f'text-anchor="middle">{n}</text>')
        short = "out" if label == GONE else "in" if label == CAME else label.replace("-", "−")
        parts.append(f'<text x="{x + HIST_BAR / 2:.1f}" y="{y0 + 16}" class="tick" text-anchor="middle">'
                     f"{escape(short)}</text>")
    parts.append(f'<text x="{HIST_LEFT - 4}" y="{height - 3}" class="tick">rank shift</text></svg>')
    return Markup("".join(parts))


HIST_CAPTION = ("Gold cards per rank shift (rank after − before; − moved up). in / out: entered / left the "
                "stored ranking. Blue: moved up; vermillion: moved down or out.")


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
            "histogram": histogram_svg(shift_buckets(comparison.changed_cases)), "histogram_caption": HIST_CAPTION,
            "no_rankings": "" if comparison.baseline_rankings else NO_RANKINGS,
            "total": len(comparison.changed_cases),
            "kb": kb_line(kb) if kb is not None and (kb.added or kb.removed or kb.edited) else ""}
