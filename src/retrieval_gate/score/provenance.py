"""The versions every measurement records (docs/decisions.md): corpus, queries and
labels as content digests, the unit of k, the scorer and the aggregation rule. Pure."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from retrieval_gate import __version__
from retrieval_gate.models import Card, Case


class Provenance(BaseModel):
    """The versions every measurement records, so a delta is read between like runs."""

    model_config = ConfigDict(extra="forbid")

    corpus_sha256: str | None  # card ids, titles, texts and metadata (content, not paths); None: no KB
    queries_sha256: str  # case ids and query texts
    labels_sha256: str  # case ids and their gold card ids
    cases_sha256: str | None = None  # the cases file (or folder) as loaded
    kb_sha256: str | None = None  # the KB file (or folder) as loaded
    k_unit: str
    scorer_version: str
    aggregation: str
    subset: dict[str, Any] | None = None  # the case set is a PR subset (see `retrieval-gate subset`)


# Bump when a metric's definition changes (what a number means), not for every release.
METRIC_CONTRACT = 1
K_UNIT = ("cards: ranked ids mapped to their card (parent_id, else id) and de-duplicated by first "
          "occurrence before the cut at k")
AGGREGATION = ("per slice, the exact mean (math.fsum) over the cases that carry the score key: "
               "no-gold cases carry none, failed cases with gold score 0; relevance is binary "
               "(gold list, or qrels grade >= 1)")


def scorer_version() -> str:
    return f"retrieval-gate {__version__}, metric contract {METRIC_CONTRACT}"


DIGEST_BATCH = 1000  # part of the digests' definition: changing it changes every digest


def _digest(records: Iterable[Any]) -> str:
    """SHA-256 over the records as canonical JSON (sorted keys, no spaces), one JSON array per
    ``DIGEST_BATCH`` records, each followed by a newline (one encoder call per batch is several
    times faster than one per record)."""
    h = hashlib.sha256()
    chunk: list[Any] = []
    for record in records:
        chunk.append(record)
        if len(chunk) >= DIGEST_BATCH:
            _update(h, chunk)
            chunk = []
    _update(h, chunk)
    return h.hexdigest()


def _update(h: Any, records: list[Any]) -> None:
    if records:
        text = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        h.update(text.encode("utf-8") + b"\n")


def corpus_digest(entries: Sequence[Card]) -> str:
    """Of every KB entry's id, card, title, text and metadata, in id order (file layout and order
    do not matter; content does)."""
    return _digest([e.id, e.card_id, e.title, e.text, e.metadata] for e in sorted(entries, key=lambda e: e.id))


def queries_digest(cases: Sequence[Case]) -> str:
    return _digest([c.id, c.query] for c in sorted(cases, key=lambda c: c.id))


def labels_digest(cases: Sequence[Case]) -> str:
    """Of every case's gold card set (gold is disjunctive: its order does not matter)."""
    return _digest([c.id, sorted(c.gold)] for c in sorted(cases, key=lambda c: c.id))


def provenance(
    *,
    cases: Sequence[Case],
    entries: Sequence[Card] | None,
    cases_sha256: str | None = None,
    kb_sha256: str | None = None,
    subset: Mapping[str, Any] | None = None,
) -> Provenance:
    return Provenance(
        corpus_sha256=corpus_digest(entries) if entries is not None else None,
        queries_sha256=queries_digest(cases),
        labels_sha256=labels_digest(cases),
        cases_sha256=cases_sha256,
        kb_sha256=kb_sha256,
        k_unit=K_UNIT,
        scorer_version=scorer_version(),
        aggregation=AGGREGATION,
        subset=dict(subset) if subset is not None else None,
    )
