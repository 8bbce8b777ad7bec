"""Bounds on every wait of the forges' API adapters (``forge/*/api.py``).

- ``CallDeadline``: a total deadline per API call — connect, headers and body together, whatever
  pace the server sends at (a client's ``timeout`` bounds each socket read, not their sum: a
  body dripped one byte every half second never times out). It is a ``SIGALRM`` timer, so it
  runs on the main thread only (where the action runs; elsewhere each read keeps its timeout).
  The waits the retry policy chooses (backoff, ``Retry-After``: bounded on their own) pause it.
- ``LostAnswer``: the connection was reset, or the body cut, after the request went out. A GET
  is asked again; after a write the adapter re-reads to learn whether it landed.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from retrieval_gate.errors import ForgeError

CALL_DEADLINE_S = 120.0  # the documented figure (docs/action.md): one call, all of it
GET_ATTEMPTS = 3  # a GET whose answer was lost is asked up to this many times
LOST_ANSWER_WAIT_S = 1.0  # before asking again: 1 s, then 2 s


class DeadlinePassed(BaseException):
    """Raised inside a blocked read when the call's deadline passes (a ``BaseException``, so no
    ``except Exception`` in PyGithub, requests or urllib3 can swallow it)."""


class LostAnswer(ForgeError):
    """The request went out but its answer did not come back whole (reset, cut body)."""


class _Clock:
    """The one running deadline (the action makes one call at a time, on the main thread)."""

    remaining: float | None = None
    started: float = 0.0


_CLOCK = _Clock()


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise DeadlinePassed


@contextmanager
def call_deadline(seconds: float | None = CALL_DEADLINE_S) -> Iterator[None]:
    if seconds is None or threading.current_thread() is not threading.main_thread() or _CLOCK.remaining is not None:
        yield  # off the main thread, or a call inside a call: the outer deadline holds
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    _CLOCK.remaining, _CLOCK.started = seconds, time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _CLOCK.remaining = None


@contextmanager
def paused() -> Iterator[None]:
    """A wait the retry policy chose: not counted against the call's deadline."""
    if _CLOCK.remaining is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))


def answer_was_lost(exc: BaseException) -> bool:
    """Whether a connection error came after the request was sent (a reset while waiting for or
    reading the answer), not from connecting."""
    text = repr(exc)
    return any(word in text for word in ("RemoteDisconnected", "ConnectionResetError", "Connection aborted",
                                         "IncompleteRead", "ProtocolError", "BrokenPipe"))


MAX_WAIT_S = 300.0  # the documented bound on any one wait (docs/action.md)
