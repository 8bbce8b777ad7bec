"""The words of "what changed and why": one line per changed case, the counts per cause, the KB's
card diff, and the clause the comment's headline adds for lost hits. Pure (plain text out; the
templates escape it).

A line reads::

    en-011 · gold en-plans-limits 5 → — · nDCG@5 0.387 → 0.000 · displaced by en-billing-change-plan
    (rank 2, +0.041, unchanged) · cause: gold card edited in this PR
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from retrieval_gate.compare.changes import stale_words
from retrieval_gate.compare.changes_model import CAUSES, ChangedCase
from retrieval_gate.compare.kb_changes import KbChanges
from retrieval_gate.compare.model import Comparison
from retrieval_gate.metrics import parse_metric
from retrieval_gate.score.scoring import OVERALL

CAUSE_WORDS = {
    "gold-removed": "gold card removed in this PR",
    "gold-edited": "gold card edited in this PR",
    "displacer-added": "a card this PR added outranks the gold",
    "displacer-edited": "a card this PR edited outranks the gold",
    "config": "the retrieval settings changed",
    "card-changed": "a card of its ranking was added, edited or removed in this PR",
    "unjudged": "an unjudged card outranks the gold: label it",
    "ranking": "ranked differently (no change found to its cards or the settings)",
}
CAUSE_COUNT_WORDS = {
    "gold-removed": "on gold cards this PR removed",
    "gold-edited": "on gold cards this PR edited",
    "displacer-added": "outranked by cards this PR added",
    "displacer-edited": "outranked by cards this PR edited",
    "config": "retrieval settings change",
    "card-changed": "a card of their ranking changed in this PR",
    "unjudged": "unjudged card on top",
    "ranking": "ranking",
}
NAMED_CARDS = 5  # cards named per kind in the KB line
MAX_LINES = 1_000  # per direction, in any Markdown (the job summary included): the rest is in comparison.json
KB_UNSEEN = ("The KB changed, but the baseline has no KB manifest beside it (`<suite>.kb.json`), so which cards "
             "this PR added, removed or edited is unknown and no card is offered for labelling; the next "
             "baseline refresh writes it.")
NO_RANKINGS = ("The baseline keeps no rankings (written before they were kept), so ranks before are unknown "
               "and only lost and gained hits are listed; the next baseline refresh records them.")


@dataclass(frozen=True)
class ChangeLine:
    id: str
    query: str
    text: str  # the whole line after the id
    cause: str
    movement: str
    slices: list[str]


def _rank(rank: int | None) -> str:
    return "—" if rank is None else str(rank)


def _num(value: float) -> str:
    return f"{value:.3f}"


def change_line(change: ChangedCase, *, rankings: bool = True) -> ChangeLine:
    parts = []
    for gold in change.gold:
        before = _rank(gold.rank_before) if rankings else "?"
        parts.append(f"gold {gold.card} {before} → {_rank(gold.rank_after)}")
    display = parse_metric(change.metric).display
    parts.append(f"{display} {_num(change.metric_before)} → {_num(change.metric_after)}")
    if change.displaced_by:
        shown = []
        for d in change.displaced_by:
            bits = [f"rank {d.rank}"]
            if d.margin_over_gold is not None:
                bits.append(f"{d.margin_over_gold:+.3f}")
            if d.kb_change is not None:
                bits.append(d.kb_change)
            if not d.judged:
                bits.append("unjudged")
            shown.append(f"{d.card} ({', '.join(bits)})")
        parts.append("displaced by " + "; ".join(shown))
    parts.append(f"cause: {CAUSE_WORDS[change.cause]}")
    return ChangeLine(id=change.id, query=change.query, text=" · ".join(parts), cause=change.cause,
                      movement=change.movement, slices=[s for s in change.slices if s != OVERALL])


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def cause_summary(changes: Sequence[ChangedCase]) -> str:
    """``4 lost hits: 3 on gold cards this PR edited, 1 ranking · 2 worse · 1 better · 1 gained hit``."""
    out = []
    for movement, word in (("lost-hit", "lost hit"), ("worse", "worse"), ("better", "better"),
                           ("gained-hit", "gained hit")):
        group = [c for c in changes if c.movement == movement]
        if not group:
            continue
        counts = [(cause, sum(1 for c in group if c.cause == cause)) for cause in CAUSES]
        detail = ", ".join(f"{n:,} {CAUSE_COUNT_WORDS[cause]}" for cause, n in counts if n)
        label = _plural(len(group), word) if "hit" in word else f"{len(group):,} {word}"
        out.append(f"{label}: {detail}")
    return " · ".join(out)


def kb_line(kb: KbChanges | None) -> str:
    """``2 cards edited (en-plans-limits "Plan limits", …), 1 added (…), 0 removed``."""
    if kb is None:
        return ""

    def named(refs: Sequence[Any], word: str) -> str:
        n = kb.total(word)
        text = f"{n:,} {'card' if n == 1 else 'cards'} {word}" if word == "edited" else f"{n:,} {word}"
        if refs:
            names = ", ".join(f'{r.card} "{r.title}"' if r.title else r.card for r in refs[:NAMED_CARDS])
            text += f" ({names}{', …' if n > NAMED_CARDS else ''})"
        return text

    return ", ".join([named(kb.edited, "edited"), named(kb.added, "added"), named(kb.removed, "removed")])


def lost_clause(comparison: Comparison | None) -> Markup:
    """What the comment's title adds after the counts when most lost hits are on gold cards this
    PR edited: `` · 2 gold cards of lost cases were edited by this PR: the edit may have removed
    the answer (check the card) or the labels are stale (update the cases)`` (safe text: card ids
    are not in it); else nothing (the title leads with the counts, ``render.verdict.title``)."""
    if comparison is None:
        return Markup("")
    out = ""
    if comparison.gold_removed:
        out += f" · {gold_removed_words(len(comparison.gold_removed))}"
    if comparison.stale_gold_cards and any(c.movement == "lost-hit" for c in comparison.changed_cases):
        out += f" · {stale_words(len(comparison.stale_gold_cards))}"
    return Markup(out)


def gold_removed_words(n: int) -> str:
    """``3 cases lost their gold card: this PR deleted it — restore the card or update the cases``
    (the title's words for ``Comparison.gold_removed``; safe text: no id in it)."""
    return (f"{n:,} case{'s' if n != 1 else ''} lost their gold card: this PR deleted it "
            "— restore the card or update the cases")


def changes_context(comparison: Comparison | None, *, limit: int | None,
                    cut: list[tuple[str, int, int]]) -> dict[str, Any]:
    """The "What changed" section's data: ``worse`` (lost hits first) and ``better`` lines, each
    at most ``limit`` (what that cut goes into ``cut``) and never more than ``MAX_LINES``, the
    counts, the KB line, and whether the section opens (a case lost its hit)."""
    if comparison is None:
        return {"shown": False}
    changes = comparison.changed_cases
    rankings = comparison.baseline_rankings
    worse = [c for c in changes if c.movement in ("lost-hit", "worse")]
    better = [c for movement in ("gained-hit", "better") for c in changes if c.movement == movement]  # gained first
    shown_worse, shown_better = worse[:MAX_LINES], better[:MAX_LINES]  # the rest: "… and N more"
    if limit is not None:  # the size steps of a comment (render.markdown): said in the ✂️ notice
        shown_worse, shown_better = shown_worse[:limit], shown_better[:limit]
        if len(worse) > limit:
            cut.append(("cases that got worse", limit, len(worse)))
        if len(better) > limit:
            cut.append(("cases that got better", limit, len(better)))
    kb = comparison.kb_changes
    kb_changed = kb is not None and bool(kb.added or kb.removed or kb.edited)
    return {
        "shown": bool(changes) or kb_changed,
        "open": any(c.movement == "lost-hit" for c in changes),
        "n": len(changes),
        "summary": cause_summary(changes),
        "kb": kb_line(kb) if kb_changed else "",
        "no_rankings": "" if rankings else NO_RANKINGS,
        "kb_unseen": KB_UNSEEN if comparison.kb_changed_unseen and changes else "",
        "stale": comparison.stale_gold_cards,
        "worse": [change_line(c, rankings=rankings) for c in shown_worse], "n_worse": len(worse),
        "better": [change_line(c, rankings=rankings) for c in shown_better], "n_better": len(better),
    }


def with_kb_cards(rows: list[dict[str, Any]], comparison: Comparison | None) -> list[dict[str, Any]]:
    """The configuration-change rows with the KB's hash row read as cards: ``48 cards`` →
    ``2 cards edited (…), 0 added, 0 removed`` (when both manifests are known)."""
    kb = comparison.kb_changes if comparison is not None else None
    if kb is None:
        return rows
    return [{**row, "baseline": f"{kb.cards_before:,} cards", "current": kb_line(kb)} if row["key"] == "inputs.kb"
            else row for row in rows]
