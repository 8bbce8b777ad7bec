"""One small JSON-over-HTTP client, with the standard library, for every forge whose REST API the
tool calls without a client library (Azure DevOps, Gitea / Forgejo: ``forge/*/api.py``).

Each call has the total deadline of every forge (``forge.wait.call_deadline``: connect, headers and
body together), each socket read a timeout, and an answer capped at ``MAX_ANSWER_BYTES``; a GET
that got a 5xx, a 429 or a lost answer is asked again (``GET_ATTEMPTS``, waits of 1 and 2 s, a
``Retry-After`` honoured up to ``forge.wait.MAX_WAIT_S``); a write is sent once (its adapter
re-reads to learn whether it landed). Proxies from the environment are not used (only the token
the adapter holds goes out, to the API it was given). Errors are named and scrubbed: a 401 or 403
names the variable whose token was refused (``PermissionDenied``), a 409 is a ``ConflictError``.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlencode

from pydantic import SecretStr

from retrieval_gate.errors import ConflictError, ForgeError, PermissionDenied
from retrieval_gate.forge.base import PostedComment
from retrieval_gate.forge.wait import (
    CALL_DEADLINE_S,
    GET_ATTEMPTS,
    LOST_ANSWER_WAIT_S,
    MAX_WAIT_S,
    DeadlinePassed,
    call_deadline,
)

MAX_ANSWER_BYTES = 64 * 1024 * 1024
Found = TypeVar("Found")


class JsonClient:
    """One forge's API at ``base``, with its tokens by variable. ``authorization`` turns a token into
    the ``Authorization`` header's value; ``no_token[variable]`` says what to do when the variable is
    empty; ``query`` is sent with every call (Azure DevOps' ``api-version``). A call names the
    variable whose token it sends; by default the reader's: the first of ``tokens`` that holds one
    (the comment token, else the write token: the refresh job reads with the token it has)."""

    def __init__(self, *, service: str, base: str, tokens: Mapping[str, SecretStr], no_token: Mapping[str, str],
                 authorization: Callable[[str], str], scrub: Callable[[str], str], log: Callable[[str], None],
                 query: Mapping[str, str] | None = None, timeout: float = 30,
                 deadline_s: float | None = CALL_DEADLINE_S, sleep: Callable[[float], None] = time.sleep) -> None:
        self.service, self.base = service, base
        self._tokens, self._no_token, self._authorization = dict(tokens), dict(no_token), authorization
        self._scrub, self._log, self._query = scrub, log, dict(query or {})
        self._timeout, self._deadline_s, self._sleep = timeout, deadline_s, sleep
        self.reader = next((name for name, token in self._tokens.items() if token.get_secret_value()),
                           next(iter(self._tokens)))

    def holds(self, variable: str) -> bool:
        return bool(self._tokens[variable].get_secret_value())

    def writable(self, action: str, *, variable: str) -> None:
        """Refuse (``PermissionDenied``, nothing sent) a write whose token is absent."""
        if not self.holds(variable):
            raise PermissionDenied(f"{action}: {self._no_token[variable]}")

    def call(self, method: str, url: str, *, action: str, variable: str | None = None,
             query: Mapping[str, str] | None = None, body: Any = None, missing_ok: bool = False) -> Any:
        """One call with ``variable``'s token (default: the reader's; a GET asked again after a 5xx,
        a 429 or a lost answer); the JSON answer, or None for a 404 when ``missing_ok``."""
        variable = variable or self.reader
        token = self._tokens[variable].get_secret_value()
        params = {**(query or {}), **self._query}
        full = f"{url}?{urlencode(params)}" if params else url
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = self._authorization(token)
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            headers["Content-Type"] = "application/json"
        attempts = GET_ATTEMPTS if method == "GET" else 1
        for attempt in range(1, attempts + 1):
            status, text, retry_after = self._once(method, full, headers=headers, data=data, action=action)
            retry = status is None or status == 429 or status >= 500
            if not retry or attempt == attempts:
                break
            wait = min(retry_after if retry_after is not None else LOST_ANSWER_WAIT_S * 2 ** (attempt - 1), MAX_WAIT_S)
            self._log(self._scrub(f"{action}: {'no whole answer' if status is None else f'HTTP {status}'}; asking "
                                  f"again in {wait:g} s (attempt {attempt + 1} of {attempts})"))
            self._sleep(wait)
        if status is None:
            raise ForgeError(self._scrub(f"{action}: the {self.service} API's answer was lost ({text})"))
        if status == 404 and missing_ok:
            return None
        if status >= 400:
            raise self._error(status, text, action=action, variable=variable)
        try:
            return json.loads(text) if text.strip() else {}
        except ValueError:
            raise ForgeError(self._scrub(f"{action}: the {self.service} API answered with a body that is not the "
                                         "JSON expected")) from None

    def _once(self, method: str, url: str, *, headers: dict[str, str], data: bytes | None,
              action: str) -> tuple[int | None, str, float | None]:
        """(status, body text, Retry-After seconds); status None when the answer was lost."""
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # only the token we hold
        try:
            with call_deadline(self._deadline_s):
                try:
                    with opener.open(request, timeout=self._timeout) as answer:
                        return answer.status, self._read(answer), None
                except urllib.error.HTTPError as exc:
                    return exc.code, self._read(exc), _retry_after(exc.headers.get("Retry-After"))
        except DeadlinePassed:
            raise ForgeError(self._scrub(f"{action}: no complete answer from the {self.service} API within "
                                         f"{self._deadline_s:g} s (total deadline per call): giving up")) from None
        except (http.client.IncompleteRead, ConnectionResetError, http.client.RemoteDisconnected) as exc:
            return None, type(exc).__name__, None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise ForgeError(self._scrub(f"{action}: cannot reach the {self.service} API at {self.base}: "
                                         f"{getattr(exc, 'reason', exc)}")) from None

    def _read(self, answer: Any) -> str:
        raw = answer.read(MAX_ANSWER_BYTES + 1)
        if len(raw) > MAX_ANSWER_BYTES:
            raise ForgeError(f"an answer of the {self.service} API is over {MAX_ANSWER_BYTES} bytes")
        return raw.decode("utf-8", errors="replace")

    def _error(self, status: int, text: str, *, action: str, variable: str) -> ForgeError:
        try:
            detail = str((json.loads(text) or {}).get("message") or "")[:200]
        except (ValueError, AttributeError):
            detail = ""
        message = self._scrub(f"{action}: HTTP {status}{': ' + detail if detail else ''}")
        if status == 401 and not self.holds(variable):
            return PermissionDenied(f"{message} ({self._no_token[variable]})")
        if status == 401:
            return PermissionDenied(f"{message} (the token in {variable} was refused)")
        if status == 403:
            return PermissionDenied(f"{message} (the token in {variable} may not)")
        if status == 409:
            return ConflictError(message)
        error = ForgeError(message)
        error.status = status  # type: ignore[attr-defined]
        return error


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def upsert_by_marker(*, find: Callable[[], Found | None], post: Callable[[], PostedComment],
                     edit: Callable[[Found], PostedComment]) -> PostedComment:
    """The sticky comment over a REST API: the one ``find`` finds is ``edit``ed, else one is
    ``post``ed. A POST whose answer failed may still have landed, so it is looked for again before
    the error stands (never two comments); a refused token stands at once."""
    found = find()
    if found is None:
        try:
            return post()
        except PermissionDenied:
            raise
        except ForgeError:
            found = find()
            if found is None:
                raise
    return edit(found)
