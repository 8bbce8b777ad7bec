"""GitHub's retry policy over PyGithub (a urllib3 ``Retry``): every wait it chooses is bounded
(``forge.wait.MAX_WAIT_S``) and paused out of the call's total deadline (``forge.wait``)."""

from __future__ import annotations

from typing import Any

from github import GithubRetry
from urllib3 import Retry
from urllib3.exceptions import HTTPError as Urllib3Error

from retrieval_gate.forge.wait import MAX_WAIT_S, paused


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
