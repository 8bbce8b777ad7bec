"""Whether a retriever's rankings can be a measurement at all, checked before they are scored. Pure.

Two outcomes are refused (the caller raises: exit 2, naming the retriever or the run file), since
either would be written as a zero with exit 0 — and ``baseline update`` would keep it:

- **every ranking is empty**: no case got a single id (an empty or misspelled collection, glue that
  returns ``[]``, or fails, for every query);
- **most returned ids are not KB cards**: more than half (``NOT_CARD_SHARE``) of the *distinct* ids
  returned over all cases — a chunk id counted as its card — name no card of the KB: file paths
  (LangChain's ``metadata["source"]``), a framework's own document ids, ``"None"`` (what
  ``str(metadata.get("card_id"))`` gives for a document without the key). Distinct ids, not
  returned slots: a retriever that answers the same stray id for every case counts it once, and
  one that is right on every card it knows is not refused for a few stale ids.

Fewer non-card ids than that are scored (as misses) with a warning naming a few of them. Without a
KB (``score`` with no ``--kb``) only the first check applies: there is no card list to check against.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from retrieval_gate.models import MISSING_FROM_RUN, KnowledgeBase, RankedList

NOT_CARD_SHARE = 0.5  # refused when the share of distinct returned ids that are not cards is above this
SHOWN_IDS = 3  # offending ids named in a message
ID_CHARS = 40  # each cut to about this many characters
REASON_CHARS = 160  # a failed case's reason quoted in the "every ranking is empty" message
NONE_TEXT = "None"  # str(None): a document without its id key, turned into text by the glue


@dataclass(frozen=True)
class IdCheck:
    """What the rankings returned, counted: cases, those with an id, failed ones, and the distinct
    ids that name no card (in the order first returned)."""

    cases: int
    answered: int  # cases whose ranking holds at least one id
    failed: int  # cases whose ranking is an error
    first_error: str | None
    distinct: int  # distinct ids returned (a chunk id as its card); 0 when there is no KB
    not_cards: tuple[str, ...]  # distinct ids that name no card, first returned first (empty without a KB)
    kb_path: str | None
    kb_example: str | None  # a card id of the KB, to show what an id looks like

    @property
    def every_ranking_empty(self) -> bool:
        return self.cases > 0 and self.answered == 0

    @property
    def not_card_share(self) -> float:
        return len(self.not_cards) / self.distinct if self.distinct else 0.0

    def problem(self, who: str) -> str | None:
        """Why these rankings are no measurement (``who``: the retriever or the run, named first),
        or None."""
        if self.every_ranking_empty:
            why = f"{self.failed} failed" if self.failed else ""
            if self.failed and self.first_error:
                why += f" (e.g. {quote(self.first_error, limit=REASON_CHARS)})"
            answered_empty = self.cases - self.failed
            parts = [p for p in (f"{answered_empty} answered no id" if answered_empty else "", why) if p]
            return (f"{who}: every ranking is empty: none of the {self.cases} cases got an id "
                    f"({', '.join(parts)}); an empty or misspelled collection, or a retriever that returns "
                    "nothing, measures nothing (no results written)")
        if self.distinct and self.not_card_share > NOT_CARD_SHARE:
            return (f"{who}: {len(self.not_cards)} of the {self.distinct} distinct ids it returned are not cards of "
                    f"the KB {self.kb_path} ({self._examples()}), more than half: they would all score as misses "
                    f"(no results written). {self._hint()}")
        return None

    def warning(self, who: str) -> str | None:
        """A few non-card ids, below the refusal's share: scored as misses, said once."""
        if self.problem(who) is not None or not self.not_cards:
            return None
        return (f"{who}: {len(self.not_cards)} of the {self.distinct} distinct ids it returned are not cards of the "
                f"KB {self.kb_path} ({self._examples()}); they score as misses")

    def _examples(self) -> str:
        shown = sorted(self.not_cards, key=lambda i: i != NONE_TEXT)[:SHOWN_IDS]  # "None", the telling one, first
        more = len(self.not_cards) - len(shown)
        return "e.g. " + ", ".join(quote(i, limit=ID_CHARS) for i in shown) + (f" and {more} more" if more > 0 else "")

    def _hint(self) -> str:
        like = f" (the KB's look like {quote(self.kb_example, limit=ID_CHARS)})" if self.kb_example else ""
        hint = (f"Return the cards' ids{like} or ids of their chunks; a framework or store retriever names the "
                "metadata key that holds the card id with the option id_key (options: {id_key: card_id})")
        if NONE_TEXT in self.not_cards:
            hint += f"; {NONE_TEXT!r} is what str(None) gives for a document without that key"
        return hint


def quote(value: str, limit: int) -> str:
    """``repr`` of ``value`` (controls shown as escapes, never sent) cut to about ``limit`` characters."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"… ({len(value):,} characters)"


def check_rankings(rankings: Iterable[RankedList | None], *, kb: KnowledgeBase | None) -> IdCheck:
    """Count what ``rankings`` (one per case; None: the case has none) returned against ``kb``."""
    cards = kb.card_ids if kb is not None else frozenset()
    chunk_to_card = kb.chunk_to_card if kb is not None else {}
    cases = answered = failed = 0
    first_error: str | None = None
    seen: dict[str, bool] = {}  # distinct id (as its card) → is a card
    for ranking in rankings:
        cases += 1
        if ranking is None or ranking.error is not None:
            failed += 1
            if first_error is None:
                first_error = ranking.error if ranking is not None else MISSING_FROM_RUN
            continue
        if ranking.ids:
            answered += 1
        if kb is None:
            continue
        for raw in ranking.ids:
            card = chunk_to_card.get(raw, raw)
            if card not in seen:
                seen[card] = card in cards
    return IdCheck(cases=cases, answered=answered, failed=failed, first_error=first_error, distinct=len(seen),
                   not_cards=tuple(i for i, is_card in seen.items() if not is_card),
                   kb_path=kb.path if kb is not None else None,
                   kb_example=min(cards) if cards else None)
