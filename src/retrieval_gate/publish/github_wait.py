"""Bounds on every wait of the GitHub adapter (``publish/github.py``).

- ``CallDeadline``: a total deadline per API call — connect, headers and body together, whatever
  pace the server sends at (PyGithub's ``timeout`` bounds each socket read, not their sum: a
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
from typing import Any

from github import GithubRetry
from urllib3 import Retry
from urllib3.exceptions import HTTPError as Urllib3Error

from retrieval_gate.errors import GitHubError

CALL_DEADLINE_S = 120.0  # the documented figure (docs/action.md): one call, all of it
GET_ATTEMPTS = 3  # a GET whose answer was lost is asked up to this many times
LOST_ANSWER_WAIT_S = 1.0  # before asking again: 1 s, then 2 s


class DeadlinePassed(BaseException):
    """Raised inside a blocked read when the call's deadline passes (a ``BaseException``, so no
    ``except Exception`` in PyGithub, requests or urllib3 can swallow it)."""


class LostAnswer(GitHubError):
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


class WaitTooLong(Urllib3Error):
    """The API asked for a wait beyond the bound: give up rather than hang the job."""


class _Retry(GithubRetry):
    """GithubRetry that never re-sends a POST after a 5xx (the server may have acted on it);
    rate-limit answers to a POST are still retried (GitHub did not act on those); and that never
    waits longer than ``max_rate_limit_wait`` for a ``Retry-After``."""

    def get_retry_after(self, response: Any) -> float | None:
        value = super().get_retry_after(response)
        bound = self.max_rate_limit_wait if self.max_rate_limit_wait is not None else MAX_WAIT_S
        if value is not None and value > bound:
            raise WaitTooLong(f"giving up: Retry-After {value:.0f} s > {bound:.0f} s (HTTP {response.status}; "
                              "the action waits at most that long)")
        return value

    def increment(self, method: str | None = None, url: str | None = None, *args: Any, **kwargs: Any) -> Any:
        response = kwargs.get("response", args[0] if args else None)
        if response is not None and response.headers.get("Retry-After"):  # refused before any "retrying" log
            try:
                self.get_retry_after(response)
            except WaitTooLong:
                response.drain_conn()  # hand the connection back: urllib3 would after a normal retry
                raise
        return super().increment(method, url, *args, **kwargs)

    def sleep(self, response: Any = None) -> None:
        with paused():  # the policy's own waits are bounded on their own
            super().sleep(response)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method.upper() == "POST" and status_code >= 500:
            return False
        return super().is_retry(method, status_code, has_retry_after)


def default_retry(*, total: int = 5, backoff_factor: float = 1.0, max_rate_limit_wait: float = MAX_WAIT_S) -> _Retry:
    return _Retry(
        total=total,
        backoff_factor=backoff_factor,
        status_forcelist=[*range(500, 600), 429],
        # PATCH (editing the comment to the same body) is idempotent; POST is filtered in is_retry.
        allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"GET", "POST", "PATCH"},
        max_rate_limit_wait=max_rate_limit_wait,
        secondary_rate_wait=60,
    )
