"""The retriever contract (docs/decisions.md): question and limit in, ranked ids out.

``Retriever.search`` answers a batch of queries; each answer is a ``RankedList`` of *card* ids
(chunk → card mapping, first-occurrence de-duplication and over-fetch are the retriever's job,
so ``limit`` means ``limit`` distinct cards). A failure for one query is a ``RankedList`` with
``error`` set — it is counted in completeness, never raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from retrieval_gate.models import RankedList


@runtime_checkable
class Retriever(Protocol):
    name: str

    def fingerprint(self) -> dict[str, Any]:
        """What identifies this retriever's configuration (goes into the baseline fingerprint)."""
        ...

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        """Rank cards for each query; one RankedList per query, in order."""
        ...
