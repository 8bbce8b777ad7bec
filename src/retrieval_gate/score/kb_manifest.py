"""The KB's card-hash manifest: card id → a short digest of its content, and its title; and its
file beside the baseline (``baselines/<suite>.kb.json``): the path, the text, the parse. Pure. The
card diff between two manifests is ``compare.kb_changes``; the file's reader and writer on disk are
``artifacts.baseline``.

A later run's manifest against the baseline's says which cards were added, removed or edited —
by content, whatever the KB's format (JSONL, BEIR, a Markdown folder) and however it was made
(generated KBs have no useful git history). A card's digest covers every entry that maps to it
(its chunks, by ``parent_id``): their ids, titles, texts and metadata, in id order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from retrieval_gate.errors import BaselineError
from retrieval_gate.models import Card

DIGEST_CHARS = 16  # 64 bits: a collision between two versions of one card is not a concern
TITLE_CHARS = 120  # titles are for display only
MANIFEST_SCHEMA_VERSION = 1


class KbCard(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sha: str
    title: str = ""


def kb_manifest(entries: Sequence[Card]) -> dict[str, KbCard]:
    """``{card id: KbCard(sha, title)}`` over the loaded KB's entries, sorted by card id."""
    by_card: dict[str, list[Card]] = {}
    for entry in entries:
        by_card.setdefault(entry.card_id, []).append(entry)
    out: dict[str, KbCard] = {}
    for card_id in sorted(by_card):
        parts = sorted(by_card[card_id], key=lambda e: e.id)
        text = json.dumps([[e.id, e.title, e.text, e.metadata] for e in parts], sort_keys=True,
                          ensure_ascii=False, separators=(",", ":"), default=str)
        title = next((e.title for e in parts if e.title), "")
        out[card_id] = KbCard.model_construct(sha=hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS],
                                              title=title[:TITLE_CHARS])
    return out


# --- The file -------------------------------------------------------------------------------------
# One line per card, sorted, so a refresh shows up in ``git diff`` as one line per added, removed
# or edited card::
#
#     {
#       "cards": {
#         "refund-policy": {"sha": "3f1c…", "title": "Refund policy"},
#         …
#       },
#       "schema_version": 1,
#       "suite": "default"
#     }

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


def judged_as_is(card: str, sha: str, sha_now: Mapping[str, str]) -> bool:
    """The one rule of staleness: a judgement made at content hash ``sha`` stands while the card's
    hash now (``sha_now``: card id → ``score.kb_manifest``'s digest) is that hash; a card edited
    since, or gone from the KB, makes it stale. A labels file's decisions (``golden.sittings``) and
    the "not relevant" sidecar's entries (``artifacts.label_sidecar``) both follow it."""
    return sha_now.get(card) == sha
