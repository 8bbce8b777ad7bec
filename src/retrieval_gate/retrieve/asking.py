"""What every retriever that answers ``limit`` *documents* (chunks, not cards) shares — ``python:``,
``http(s)://`` and the framework specs (``retrieve.frameworks``):

- **over-fetch** (``Overfetch``): ask for ``limit × overfetch`` documents; map each to its card,
  keeping a card at its first (best) rank; while fewer than ``limit`` distinct cards came out, ask
  again for twice as many — until ``limit`` cards, or the answer is shorter than asked (nothing
  more there, or a retriever that ignores the number), or it is the same as the last (nothing
  new), or ``MAX_DOUBLINGS`` doublings. Then cut at ``limit``;
- **bounded concurrency** for async retrievers (``gather_bounded``);
- **identity** (``source_identity``): the sha256 of the module that holds the retriever, so an
  edit to it shows as a configuration change.

Pure except ``gather_bounded`` (an event loop) and ``source_identity`` (reads one file).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")

MAX_DOUBLINGS = 10  # at most 1,024 × the first ask


def cards_with_scores(ids: Sequence[str], scores: Sequence[float] | None, limit: int,
                      chunk_to_card: Mapping[str, str] | None) -> tuple[tuple[str, ...], tuple[float, ...] | None]:
    """Map ids to cards keeping each card's first (best) occurrence — and that occurrence's
    score — then cut at ``limit``."""
    cards: dict[str, float | None] = {}
    if limit <= 0:
        return (), (() if scores is not None else None)
    for i, raw in enumerate(ids):
        card = chunk_to_card.get(raw, raw) if chunk_to_card is not None else raw
        if card not in cards:
            cards[card] = float(scores[i]) if scores is not None else None
            if len(cards) == limit:
                break
    kept = tuple(cards)
    return kept, (tuple(cards.values()) if scores is not None else None)  # type: ignore[arg-type]


class Overfetch:
    """One query's over-fetch loop, as a state machine both sync and async callers drive::

        want = Overfetch(limit=10, overfetch=3, chunk_to_card=…)
        while not want.done:
            ids, scores = ask(want.n)     # the retriever, asked for want.n documents
            want.take(ids, scores)
        cards, scores = want.cards, want.scores
    """

    def __init__(self, *, limit: int, overfetch: int, chunk_to_card: Mapping[str, str] | None):
        self.limit = limit
        self.chunk_to_card = chunk_to_card
        self.n = max(limit, 0) * max(overfetch, 1)
        self.cards: tuple[str, ...] = ()
        self.scores: tuple[float, ...] | None = None
        self.asks: list[int] = []  # the n of each ask, in order
        self.done = limit <= 0
        self._last: list[str] | None = None
        self._first = self.n

    def take(self, ids: Sequence[str], scores: Sequence[float] | None) -> None:
        self.asks.append(self.n)
        self.cards, self.scores = cards_with_scores(ids, scores, self.limit, self.chunk_to_card)
        got = list(ids)
        self.done = (len(self.cards) >= self.limit or len(got) < self.n or got == self._last
                     or self.n >= self._first * 2 ** MAX_DOUBLINGS)
        self._last = got
        self.n *= 2


def gather_bounded(calls: Sequence[Callable[[], Awaitable[T]]], bound: int) -> list[T]:
    """Await every call, at most ``bound`` at once, in one event loop; results in order. Run in a
    thread of its own when the caller is already inside an event loop (a notebook)."""

    async def main() -> list[T]:
        gate = asyncio.Semaphore(max(bound, 1))

        async def one(call: Callable[[], Awaitable[T]]) -> T:
            async with gate:
                return await call()

        return list(await asyncio.gather(*(one(call) for call in calls)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = asyncio.run(main())
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=run, name="retrieval-gate-async")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def source_identity(module: ModuleType | None, obj: Any = None) -> dict[str, Any]:
    """``{"source_sha256": …}``: the sha256 of the file of the module that holds the retriever (the
    module named in the spec; else the one ``obj`` was defined in). Empty when there is no file to
    read (a module built in memory)."""
    candidates = [module] if module is not None else []
    if obj is not None:
        candidates.append(inspect.getmodule(obj if inspect.isclass(obj) or callable(obj) else type(obj)))
    for mod in candidates:
        path = getattr(mod, "__file__", None)
        if path and Path(path).is_file():
            return {"source_sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}
    return {}
