"""The KB's card diff: which cards this run's KB added, removed or edited relative to the
baseline's (by content: two ``score.kb_manifest`` manifests → ``KbChanges``). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_gate.score.kb_manifest import KbCard

KbChange = Literal["added", "edited", "removed", "unchanged"]  # a card relative to the baseline's KB


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CardRef(_Strict):
    card: str
    title: str = ""


KB_CHANGES_LISTED = 1_000  # cards listed per kind in a comparison; the totals are counted whole


class KbChanges(_Strict):
    """Cards this run's KB added, removed or edited relative to the baseline's KB (by content).
    Each list holds the first ``KB_CHANGES_LISTED`` cards by id; ``*_total`` is the whole count when
    the list was cut (None: the list is whole), so a comparison stays small — within the fork-comment
    path's cap — however many cards a pull request changes."""

    added: list[CardRef] = Field(default_factory=list)
    removed: list[CardRef] = Field(default_factory=list)
    edited: list[CardRef] = Field(default_factory=list)
    cards_before: int = 0
    cards_after: int = 0
    added_total: int | None = None
    removed_total: int | None = None
    edited_total: int | None = None

    def total(self, kind: str) -> int:
        """How many cards were ``added``, ``removed`` or ``edited``, listed or not."""
        counted = getattr(self, f"{kind}_total")
        return len(getattr(self, kind)) if counted is None else counted


def kb_diff(*, before: Mapping[str, KbCard], after: Mapping[str, KbCard]) -> KbChanges:
    """Cards added, removed and edited (same id, other content), each sorted by id, with the
    title of the side that has it (this run's for added and edited cards)."""
    listed = KB_CHANGES_LISTED
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    edited = sorted(c for c in set(before) & set(after) if before[c].sha != after[c].sha)
    return KbChanges(added=[CardRef(card=c, title=after[c].title) for c in added[:listed]],
                     removed=[CardRef(card=c, title=before[c].title) for c in removed[:listed]],
                     edited=[CardRef(card=c, title=after[c].title or before[c].title) for c in edited[:listed]],
                     added_total=len(added) if len(added) > listed else None,
                     removed_total=len(removed) if len(removed) > listed else None,
                     edited_total=len(edited) if len(edited) > listed else None,
                     cards_before=len(before), cards_after=len(after))
