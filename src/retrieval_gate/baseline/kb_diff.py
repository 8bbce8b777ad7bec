"""The KB manifest file beside the baseline (``baselines/<suite>.kb.json``) and the card diff
between two manifests. Pure: text ⇄ ``{card id: KbCard}``, and two of those → ``KbChanges``.

The file is one line per card, sorted, so a refresh shows up in ``git diff`` as one line per
added, removed or edited card::

    {
      "cards": {
        "refund-policy": {"sha": "3f1c…", "title": "Refund policy"},
        …
      },
      "schema_version": 1,
      "suite": "default"
    }
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from retrieval_gate.errors import BaselineError
from retrieval_gate.score.kb_manifest import KbCard

MANIFEST_SCHEMA_VERSION = 1
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


MANIFEST_SUFFIX = ".kb.json"


def manifest_path(baseline_path: str) -> str:
    """``baselines/default.json`` → ``baselines/default.kb.json`` (a name without ``.json``
    gets the suffix appended)."""
    stem = baseline_path[:-len(".json")] if baseline_path.endswith(".json") else baseline_path
    return stem + MANIFEST_SUFFIX


def dumps_manifest(cards: Mapping[str, KbCard], *, suite: str) -> str:
    lines = ["{", '  "cards": {']
    items = sorted(cards.items())
    for i, (card_id, card) in enumerate(items):
        sep = "," if i < len(items) - 1 else ""
        body = json.dumps({"sha": card.sha, "title": card.title}, sort_keys=True, ensure_ascii=False)
        lines.append(f"    {json.dumps(card_id, ensure_ascii=False)}: {body}{sep}")
    lines.append("  },")
    lines.append(f'  "schema_version": {MANIFEST_SCHEMA_VERSION},')
    lines.append(f'  "suite": {json.dumps(suite, ensure_ascii=False)}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def parse_manifest(text: str, *, source: str) -> dict[str, KbCard]:
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{source}:{exc.lineno}: not a KB manifest: JSON syntax error: {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cards"), dict):
        raise BaselineError(f"{source}: not a KB manifest: expected an object with 'cards'")
    version = data.get("schema_version")
    if version != MANIFEST_SCHEMA_VERSION:
        raise BaselineError(f"{source}: KB manifest schema_version {version!r}: this tool reads "
                            f"{MANIFEST_SCHEMA_VERSION}")
    try:
        return {str(card_id): KbCard.model_validate(card) for card_id, card in data["cards"].items()}
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise BaselineError(f"{source}: not a valid KB manifest: {first['msg']}") from None


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
