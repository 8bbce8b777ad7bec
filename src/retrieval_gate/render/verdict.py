"""The words of a report: the verdict, the gate in force, the statistics used. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.baseline.model import Baseline
from retrieval_gate.compare.changes import gate_reasons
from retrieval_gate.compare.gate import GateSettings, format_p
from retrieval_gate.compare.model import Comparison, ComparisonStats
from retrieval_gate.metrics.names import display_name, headline_names
from retrieval_gate.render.cells import Cell
from retrieval_gate.score.scoring import OVERALL
from retrieval_gate.stats.multiplicity import CORRECTIONS


@dataclass(frozen=True)
class Title:
    """What the report's title says: ``state`` (one of ``TITLE_STATES``), ``mark`` (an emoji, one
    per state) and ``text`` (counts first: ``3 lost, 0 gained — too few to be sure at n = 41``).
    Every renderer (the comment, the HTML report's header, the terminal) builds its title from it."""

    state: str
    mark: str
    text: str


# state → mark. Distinct marks, so the title alone tells "nothing moved" from "cases broke".
TITLE_MARKS = {
    "first_run": "🆕", "not_compared": "ℹ️",
    "unchanged": "⚪",  # no paired case changed
    "balanced": "⚖️",  # cases moved, not a net loss (as many gained as lost, or more)
    "unsure": "🟡",  # more lost than gained, not significant at this n
    "mixed": "🟠",  # the judged row held, a reported row or slice got significantly worse
    "regressed": "🔴",  # the judged row dropped significantly (the gate is off or lets it through)
    "fail": "❌",  # the gate failed
    "needs_labels": "🏷️",  # some labelling of a pooled set's unjudged cards changes the decision: label those
    "improved": "🟢",
}
TITLE_STATES = tuple(TITLE_MARKS)


def _counts(comparison: Comparison) -> tuple[int, int, str]:
    lost, gained = len(comparison.lost_hits), len(comparison.gained_hits)
    return lost, gained, f"{lost:,} lost, {gained:,} gained"


def _moved(comparison: Comparison) -> int:
    """Paired cases whose score changed on some headline row of ``overall`` (0: nothing moved)."""
    names = set(headline_names(comparison.headline_k))
    return max((r.n_changed or 0 for r in comparison.rows if r.slice == OVERALL and r.metric in names), default=0)


def _rule(comparison: Comparison) -> str:
    """Which gate rule failed, in a few words: ``hit@5 dropped 0.122 (p = 0.031)``, ``hit@5 below
    its floor 0.7`` (the first failing judged row; the full lines follow the title)."""
    for row in comparison.rows:
        if not row.gated:
            continue
        name = display_name(row.metric) + ("" if row.slice == OVERALL else f" on {row.slice}")
        if row.status == "below_floor" and row.floor is not None:
            return f"{name} below its floor {row.floor:g}"
    for row in comparison.rows:
        if row.gated and row.status == "regressed" and row.delta is not None:
            name = display_name(row.metric) + ("" if row.slice == OVERALL else f" on {row.slice}")
            p = row.p_adjusted if row.p_adjusted is not None else row.p_value
            return f"{name} dropped {-row.delta:.3f}" + ("" if p is None else f" (p {_p_words(p)})")
    n = len(gate_reasons(comparison)[0])  # the stale-labels hint explains, it is not a rule
    return f"{n} rule{'s' if n != 1 else ''} failed"


TOP_UP_COMMAND = "retrieval-gate label top-up --results results.json --out top-up"  # every unjudged card
# only the cards that decide the verdict (needs-labels), in the order that settles it soonest
DECISIVE_TOP_UP_COMMAND = "retrieval-gate label top-up --results results.json --baseline baseline.json --out top-up"


def needs_labels_words(comparison: Comparison) -> str:
    """``needs labels: 12 cards decide the verdict`` — what the title says when some labelling of
    a pooled set's unjudged cards changes the gate's decision (``compare.decisive``): the decisive
    cards, and the verdict labelled each way."""
    need = comparison.needs_labels
    if need is None:  # a file from before schema 6: the two readings disagreed
        n, k = comparison.unjudged_top_k, comparison.headline_k
        return (f"needs labels: {n:,} unjudged card{'s' if n != 1 else ''} in this PR's top {k} decide the verdict "
                f"(the gate {'fails' if _standard_fails(comparison) else 'passes'} if they are not relevant, "
                f"{'passes' if _standard_fails(comparison) else 'fails'} without them)")
    n = need.cards
    return (f"needs labels: {n:,} card{'s' if n != 1 else ''} in {need.cases:,} case{'s' if need.cases != 1 else ''} "
            f"decide the verdict (the gate {_verdict_word(need.if_relevant)} if the cards only this PR ranks are "
            f"relevant, {_verdict_word(need.if_not_relevant)} if those only the baseline ranks are)")


def _verdict_word(verdict: str) -> str:
    return {"pass": "passes", "fail": "fails"}.get(verdict, verdict)


def _standard_fails(comparison: Comparison) -> bool:
    """The standard reading's gate failed (its failures are recorded)."""
    return bool(comparison.failures)


def unjudged_note(comparison: Comparison | None) -> str:
    """The comment's sentence when the PR's top k holds more than the documented share of unjudged
    cards (``compare.condensed.UNJUDGED_NOTE_SHARE``) on a pooled set, even when the labels decide
    the verdict; else empty (a complete set has no unjudged card: ``Comparison.unjudged_note``)."""
    if comparison is None or not comparison.unjudged_note or comparison.unjudged_share is None:
        return ""
    from retrieval_gate.compare.condensed import UNJUDGED_NOTE_SHARE

    return (f"{comparison.unjudged_share:.0%} of this PR's top {comparison.headline_k} are cards no judgement covers "
            f"({comparison.unjudged_top_k:,} cards; more than {UNJUDGED_NOTE_SHARE:.0%}): the numbers count them as "
            f"not relevant, a lower bound — label them")


def _p_words(p: float | None) -> str:
    text = format_p(p)
    return f"< {text[1:]}" if text.startswith("<") else f"= {text}"


def title(*, comparison: Comparison | None, baseline: Baseline | None, headline: Sequence[Cell],
          worse: Sequence[tuple[str, Cell]] = ()) -> Title:
    """The title's state, mark and words (``Title``). ``headline``: the overall cells of the
    headline measures; ``worse``: rows that count as worse (judged ones, and reported ones
    significant after Holm over the reported rows, ``render.cells.worse_cells``)."""
    if comparison is None:
        if baseline is None:
            return Title("first_run", TITLE_MARKS["first_run"], "first run, no baseline yet")
        return Title("not_compared", TITLE_MARKS["not_compared"], "not compared with the baseline")
    lost, gained, counts = _counts(comparison)
    # the n of the row the title judges (the first headline measure's overall row), as its table says
    n = headline[0].n if headline else comparison.n_paired
    if comparison.verdict == "needs-labels":
        return Title("needs_labels", TITLE_MARKS["needs_labels"], f"{counts} — {needs_labels_words(comparison)}")
    if comparison.verdict == "fail":
        return Title("fail", TITLE_MARKS["fail"], f"{counts} — gate failed: {_rule(comparison)}")
    improved = any(c.status == "improved" and c.gated for c in headline)
    judged_bad = [c for c in headline if c.bad and c.gated]
    if judged_bad:
        cell = judged_bad[0]
        what = "below its floor" if cell.status == "below_floor" else "a significant drop"
        return Title("regressed", TITLE_MARKS["regressed"], f"{counts} — {cell.display} regressed ({what})")
    if worse or comparison.regressed:
        words = "better overall, worse in places" if improved else "worse in places"
        return Title("mixed", TITLE_MARKS["mixed"], f"{counts} — {words}")
    if improved:
        return Title("improved", TITLE_MARKS["improved"], f"{counts} — improved")
    if lost == gained == 0:
        moved = _moved(comparison)
        if moved == 0:
            return Title("unchanged", TITLE_MARKS["unchanged"], "no case changed")
        return Title("balanced", TITLE_MARKS["balanced"],
                     f"no hit lost or gained — {moved:,} case{'s' if moved != 1 else ''} moved within the ranking")
    if lost > gained:
        return Title("unsure", TITLE_MARKS["unsure"], f"{counts} — too few to be sure at n = {n:,}")
    if lost == gained:
        return Title("balanced", TITLE_MARKS["balanced"], f"{counts} — no net effect")
    return Title("balanced", TITLE_MARKS["balanced"], f"{counts} — no net loss; too few to be sure of a gain at "
                                                      f"n = {n:,}")


def verdict(*, comparison: Comparison | None, baseline: Baseline | None, headline: Sequence[Cell],
            worse: Sequence[tuple[str, Cell]] = ()) -> dict[str, str]:
    """The title as the templates read it: ``kind`` (the state), ``emoji`` (the mark), ``title``
    (the words), ``counts`` (``3 lost, 0 gained``, empty without a comparison)."""
    found = title(comparison=comparison, baseline=baseline, headline=headline, worse=worse)
    counts = _counts(comparison)[2] if comparison is not None else ""
    return {"kind": found.state, "emoji": found.mark, "title": found.text, "counts": counts}


GOLD_REMOVED_ADVICE = "restore the card or update the cases"


def gold_missing_lines(results: Any) -> list[str]:
    """One warning per case whose gold names no card of this run's KB (``Results.gold_missing``):
    ``cases.jsonl:15: case 'x': gold id 'df' is not a card in kb: scored as a loss (a deleted card:
    restore the card or update the cases; never a card: fix the id)``."""
    inputs = getattr(results, "inputs", {})
    where = inputs["cases"].path if "cases" in inputs else "cases"
    kb = inputs["kb"].path if "kb" in inputs else "the KB"
    lines = {case.id: case.line for case in results.cases}
    out = []
    for case_id, cards in sorted(results.gold_missing.items()):
        line = lines.get(case_id)
        at = f"{where}:{line}" if line is not None else where
        ids = ", ".join(repr(c) for c in cards)
        out.append(f"{at}: case {case_id!r}: gold id{'s' if len(cards) != 1 else ''} {ids} "
                   f"{'are' if len(cards) != 1 else 'is'} not a card in {kb}: scored as a loss (a card this "
                   f"change deleted: {GOLD_REMOVED_ADVICE}; never a card: fix the id)")
    return out


def gate_active(gate: GateSettings) -> bool:
    return bool(gate.fail_on_regression or gate.max_drop or gate.floors)


def gate_summary(gate: GateSettings) -> str:
    """One line describing the gate knobs in force ("off (report only)" when none is on)."""
    parts = []
    if gate.fail_on_regression:
        text = f"fail on regression (max drop {gate.default_max_drop:g}"
        text += ", significant drops only)" if gate.require_significance else ")"
        parts.append(text)
    if gate.max_drop:
        parts.append("max drop " + ", ".join(f"{k} {v:g}" for k, v in sorted(gate.max_drop.items())))
    if gate.floors:
        parts.append("floors " + ", ".join(f"{k} ≥ {v:g}" for k, v in sorted(gate.floors.items())))
    return "; ".join(parts) if parts else "off (report only)"


CORRECTION_WORDS = dict(zip(CORRECTIONS, ("Holm", "Benjamini–Hochberg", "no"), strict=True))


def correction_text(stats: ComparisonStats) -> str:
    """``Holm-adjusted over the 3 judged rows`` (empty for a comparison from before corrections)."""
    method = stats.correction
    if method is None:
        return ""
    judged = stats.judged_rows or 0
    rows = f"the {judged} judged row{'s' if judged != 1 else ''}"
    if stats.layout == 4:  # one-sided; a correction only over several rows
        if judged <= 1:
            return "one-sided, a single judged row (nothing to correct)"
        if method == "none":
            return f"one-sided, not corrected over {rows}"
        return f"one-sided, {CORRECTION_WORDS[method]}-adjusted over {rows}"
    if method == "none":
        return f"not corrected over {rows}"
    return f"{CORRECTION_WORDS[method]}-adjusted over {rows}"


def stats_note(stats: ComparisonStats) -> str:
    """The terminal's one-line legend of the CI, p and MDE columns."""
    level = 0.95 if stats.ci_level is None else stats.ci_level
    power = 0.8 if stats.power is None else stats.power
    if stats.layout == 1:
        return f"CI {level:.0%} paired bootstrap; p: sign-flip test."
    if stats.layout == 2 or stats.ci_level_judged is None:
        return (f"CI: the sign-flip test inverted at {level:.0%} (judged rows: at the level the correction "
                f"leaves them); p: sign-flip test, judged rows {correction_text(stats)}; MDE: minimum "
                f"detectable effect at n (power {power:g}).")
    judged = stats.ci_level_judged
    how = "two-sided, matching their one-sided test" if stats.layout == 4 else "Bonferroni"
    return (f"CI at {100 * level:.3g}%, judged rows at {100 * judged:.3g}% ({how}): Tango's score interval "
            f"for hit-like (0/1) measures, else a paired t interval (Tango's on fractional counts under 6 "
            f"changed cases); ‡: the CI and the test disagree about 0, the status reads the test. p: exact "
            f"sign test (0/1 measures) or sign-flip test, judged rows {correction_text(stats)}. MDE: the "
            f"smallest true drop the row's test detects at power {power:g} at its n.")


def stats_line(stats: ComparisonStats) -> str:
    """``Tango score interval …, p of judged rows …, 10,000 resamples, seed 0`` from a comparison's stats."""
    method = stats.ci or stats.method
    if not method:
        return ""
    parts = [method]
    if correction_text(stats):
        parts.append(f"p of judged rows {correction_text(stats)}")
    if stats.resamples:
        parts.append(f"{stats.resamples:,} resamples")
    if stats.seed is not None:
        parts.append(f"seed {stats.seed}")
    return ", ".join(parts)


POWER_SLICES_SHOWN = 5


def judged_level(stats: ComparisonStats) -> tuple[float, bool]:
    """``(alpha, one_sided)`` at which a comparison's judged rows are tested: one-sided at
    ``(1 − ci_level_judged)/2`` from schema 4 on, two-sided at ``1 − ci_level_judged`` before."""
    alpha = 0.05 if stats.alpha is None else stats.alpha
    level = stats.ci_level_judged
    if stats.layout == 4:
        return (alpha if level is None else (1 - level) / 2), True
    return (alpha if level is None else 1 - level), False


def power_summary(*, overall: Cell | None, slices: Sequence[tuple[str, Cell]],
                  stats: ComparisonStats | None = None) -> dict[str, Any] | None:
    """The comment's one power sentence, in cases: what the primary metric's overall row catches
    at 80 % power (``mde``, None: no drop detectable; ``cases``: that drop as a net loss of whole
    cases, ⌈MDE·n⌉), the fewest lost cases that fail the gate when nothing is gained (``enough``,
    for a judged row: the smallest m with (½)^m below the judged level — 5 at α = 0.05), its max
    drop, and the slices (``(label, cell)``, smallest n first) whose MDE exceeds their max drop.
    Nothing in it grows with the observed drop. None without a compared row."""
    if overall is None or not overall.compared or overall.n == 0:
        return None
    short = [(label, cell) for label, cell in slices if cell.compared and cell.n > 0 and cell.max_drop is not None
             and (cell.mde is None or cell.mde > cell.max_drop + 1e-12)]
    short.sort(key=lambda item: (item[1].n, item[0]))
    enough = None
    if overall.gated:
        alpha, one_sided = judged_level(stats or ComparisonStats())
        least = max(1, math.floor(math.log2((1.0 if one_sided else 2.0) / alpha)) + 1)
        enough = least if least <= overall.n else None
    cases = None if overall.mde is None else max(1, math.ceil(overall.mde * overall.n - 1e-9))
    return {"display": overall.display, "n": overall.n, "mde": overall.mde, "max_drop": overall.max_drop,
            "cases": cases, "enough": enough,
            "judged": overall.gated, "slices": [{"label": label, "n": cell.n, "mde": cell.mde}
                                                 for label, cell in short[:POWER_SLICES_SHOWN]],
            "more_slices": max(0, len(short) - POWER_SLICES_SHOWN)}
