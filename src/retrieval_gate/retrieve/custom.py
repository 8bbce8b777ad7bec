"""Pluggable retrievers (question and limit in, ranked ids out). None of them embeds
the KB or loads a model.

- ``python:module:function`` (or ``python:path/to/file.py:function``): ``function(query: str,
  limit: int) -> list[str]`` of card (or chunk) ids, best first. If a case has a ``filter`` the
  function is called with ``filter=…`` and must accept it (else that case fails). An ``async def``
  function is awaited, ``async_concurrency`` queries at once. Its configuration record holds the
  sha256 of its module's file and the ``retriever_version`` option, so an edit shows as a change.
- ``http(s)://…``: ``POST {"query", "limit"[, "filter"]}`` → ``{"ids": […][, "scores": […]]}``,
  with a per-read timeout, a total deadline per attempt (connect + headers + body: a server that
  trickles one byte at a time is cut off), an answer of at most ``http_max_bytes`` and bounded
  retries (connection errors, timeouts, HTTP 429 and 5xx; other 4xx
  are not retried). A query that still fails becomes that case's error — counted as failed in
  completeness, never a crash. A circuit breaker stops the eval (``RetrieverError``, exit 2) after
  ``http_breaker`` consecutive failed cases, instead of waiting out every remaining case.
- ``run:path``: a precomputed run file (``load/runs.py``: TREC or JSONL), matched by case id.

Answers are mapped chunk → card, de-duplicated by first occurrence and cut at ``limit``; ``python:``
and ``http(s)://`` over-fetch until ``limit`` distinct cards (``retrieve.asking.Overfetch``: the
first ask is ``limit × overfetch``, doubled while too few cards came out and more may be there).
"""

from __future__ import annotations

import asyncio
import functools
import http.client
import importlib
import importlib.util
import inspect
import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from retrieval_gate.errors import RetrieverError
from retrieval_gate.http_deadline import Deadline as _Deadline
from retrieval_gate.http_deadline import public_url
from retrieval_gate.load import boundary
from retrieval_gate.load.runs import Run
from retrieval_gate.models import MISSING_FROM_RUN, Case, RankedList
from retrieval_gate.retrieve.asking import Overfetch, cards_with_scores, gather_bounded, source_identity
from retrieval_gate.retrieve.settings import CustomSettings, HttpSettings


def _as_ids(value: Any, where: str) -> list[str]:
    """A returned ranking must be a list of ids (strings, or integers taken as text)."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise TypeError(f"{where} must return a list of ids, got {type(value).__name__}")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise TypeError(f"{where} returned a non-id item {item!r}")
        out.append(str(item))
    return out


def _finish(want: Overfetch, started: float) -> RankedList:
    return RankedList(ids=want.cards, scores=want.scores, latency_ms=(time.perf_counter() - started) * 1000.0)


def identity(module: ModuleType | None, obj: Any, version: str | int | None) -> dict[str, Any]:
    """The configuration record's part that says which code and which version answered."""
    return {**source_identity(module, obj), **({"retriever_version": version} if version is not None else {})}


# ---- python:module:function -------------------------------------------------------------------

def load_target(target: str, *, kind: str = "python", what: str = "function") -> tuple[ModuleType, Any]:
    """``module:attr`` or ``path/to/file.py:attr`` → (the module, the attribute). Raises RetrieverError
    naming the spec (``kind:target``)."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise RetrieverError(f"retriever {kind}:{target}: expected {kind}:module:{what}")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise RetrieverError(f"retriever {kind}:{target}: file {module_name} not found")
            spec = importlib.util.spec_from_file_location(f"_rg_custom_{path.stem}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(module_name)
    except RetrieverError:
        raise
    except Exception as exc:
        raise RetrieverError(f"retriever {kind}:{target}: cannot import {module_name}: "
                             f"{type(exc).__name__}: {boundary.clip(str(exc))}") from None
    if not hasattr(module, attr):
        raise RetrieverError(f"retriever {kind}:{target}: {module_name} has no {what} {attr!r}")
    return module, getattr(module, attr)


def _load_callable(target: str) -> tuple[ModuleType, Callable[..., Any]]:
    module, func = load_target(target)
    if not callable(func):
        raise RetrieverError(f"retriever python:{target}: {boundary.clip(repr(func))} is not a function")
    return module, func


def _accepts_filter(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "filter" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


class PythonRetriever:
    """Calls a user function per query (``limit`` documents asked, over-fetched to ``limit`` cards);
    an ``async def`` function is awaited, ``concurrency`` queries at once."""

    def __init__(self, *, target: str, func: Callable[..., Any] | None = None,
                 chunk_to_card: Mapping[str, str] | None = None, overfetch: int = 3,
                 options: CustomSettings | None = None):
        self.target = target
        module, self.func = (None, func) if func is not None else _load_callable(target)
        self.chunk_to_card = chunk_to_card
        self.overfetch = overfetch
        self.options = options or CustomSettings()
        self.name = f"python:{target}"
        self._filter_ok = _accepts_filter(self.func)
        self._async = inspect.iscoroutinefunction(self.func)
        self._identity = identity(module, self.func, self.options.retriever_version)

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, **self._identity}

    def _call(self, query: str, n: int, where: dict[str, Any] | None) -> Any:
        return self.func(query, n, filter=where) if where is not None else self.func(query, n)

    def _refused(self, where: dict[str, Any] | None) -> RankedList | None:
        if where is not None and not self._filter_ok:
            return RankedList(error=f"{self.name} takes no 'filter' argument but the case has a filter")
        return None

    def _failed(self, exc: BaseException) -> RankedList:
        return RankedList(error=f"{self.name}: {type(exc).__name__}: {boundary.clip(str(exc))}")

    def _one(self, query: str, limit: int, where: dict[str, Any] | None) -> RankedList:
        started = time.perf_counter()
        refused = self._refused(where)
        if refused is not None:
            return refused
        want = Overfetch(limit=limit, overfetch=self.overfetch, chunk_to_card=self.chunk_to_card)
        try:
            while not want.done:
                want.take(_as_ids(self._call(query, want.n, where), self.name), None)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return self._failed(exc)
        return _finish(want, started)

    async def _one_async(self, query: str, limit: int, where: dict[str, Any] | None) -> RankedList:
        started = time.perf_counter()
        refused = self._refused(where)
        if refused is not None:
            return refused
        want = Overfetch(limit=limit, overfetch=self.overfetch, chunk_to_card=self.chunk_to_card)
        try:
            while not want.done:
                want.take(_as_ids(await self._call(query, want.n, where), self.name), None)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:
            return self._failed(exc)
        return _finish(want, started)

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        wheres = list(filters) if filters is not None else [None] * len(queries)
        if self._async:
            return gather_bounded([functools.partial(self._one_async, q, limit, w)
                                   for q, w in zip(queries, wheres, strict=True)], self.options.concurrency)
        return [self._one(q, limit, w) for q, w in zip(queries, wheres, strict=True)]


# ---- HTTP endpoint ------------------------------------------------------------------------------

class _Retryable(Exception):
    pass


class HttpRetriever:
    """POSTs each query to a user's search endpoint. Its name, fingerprint and error messages
    show the URL without credentials or query string."""

    def __init__(self, *, url: str, options: HttpSettings | None = None,
                 chunk_to_card: Mapping[str, str] | None = None,
                 sleep: Callable[[float], None] = time.sleep, overfetch: int = 3):
        self.url = url
        self.overfetch = overfetch
        self.options = options or HttpSettings()
        self.chunk_to_card = chunk_to_card
        self.name = public_url(url)
        self._sleep = sleep
        self._breaker_lock = threading.Lock()
        self._failed_in_a_row = 0
        self._last_error = ""
        self._tripped = False

    def fingerprint(self) -> dict[str, Any]:
        return {"name": "http", "url": self.name}

    def _post(self, payload: dict[str, Any]) -> Any:
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self.options.headers}
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        deadline = _Deadline(self.options.deadline_s)
        timed_out = False
        try:
            timeout = min(self.options.timeout_s, self.options.deadline_s)
            with deadline.opener().open(request, timeout=timeout) as response:
                raw = deadline.read(response, self.options.max_bytes + 1)
        except (OSError, http.client.HTTPException) as exc:
            failure = self._failure(exc)
            timed_out = _is_timeout(exc)
        else:
            failure = None
        finally:
            deadline.cancel()
        # A cut-off answer may also look complete but short. When the deadline is the shorter, the
        # socket's timeout is the deadline too: whichever of the two fired first, it is the deadline.
        if deadline.expired.is_set() or (timed_out and self.options.deadline_s <= self.options.timeout_s):
            raise _Retryable(f"no complete answer within {self.options.deadline_s:g} s")
        if failure is not None:
            raise failure
        if len(raw) > self.options.max_bytes:
            raise ValueError(f"answer is longer than {self.options.max_bytes:,} bytes")
        try:
            return boundary.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ValueError("response is not JSON") from None
        except boundary.JsonRefused as exc:
            raise ValueError(f"response refused: {exc.message}") from None

    def _failure(self, exc: BaseException) -> Exception:
        """The retryable (or not) failure an HTTP error, timeout or connection error means."""
        if isinstance(exc, urllib.error.HTTPError):
            message = f"HTTP {exc.code} {exc.reason}"
            return _Retryable(message) if exc.code == 429 or exc.code >= 500 else ValueError(message)
        if _is_timeout(exc):
            return _Retryable(f"timed out after {self.options.timeout_s:g} s")
        if isinstance(exc, urllib.error.URLError):
            return _Retryable(f"cannot connect: {exc.reason}")
        return _Retryable(f"connection failed: {type(exc).__name__}: {exc}")

    def _one(self, query: str, limit: int, where: dict[str, Any] | None) -> RankedList:
        if self._tripped:
            return RankedList(error=f"{self.name}: not asked (the circuit breaker is open)")
        answer = self._attempts(query, limit, where)
        with self._breaker_lock:
            if answer.error is None:
                self._failed_in_a_row = 0
            else:
                self._failed_in_a_row += 1
                self._last_error = answer.error
                if self.options.breaker and self._failed_in_a_row >= self.options.breaker:
                    self._tripped = True
        return answer

    def _attempts(self, query: str, limit: int, where: dict[str, Any] | None) -> RankedList:
        """One case: asked for ``limit × overfetch`` ids, then twice as many while too few distinct
        cards came out (``Overfetch``); any ask that fails fails the case."""
        started = time.perf_counter()
        want = Overfetch(limit=limit, overfetch=self.overfetch, chunk_to_card=self.chunk_to_card)
        while not want.done:
            answer = self._ask(query, want.n, where)
            if isinstance(answer, str):
                return RankedList(error=answer)
            want.take(*answer)
        return _finish(want, started)

    def _ask(self, query: str, n: int, where: dict[str, Any] | None) -> tuple[list[str], list[float] | None] | str:
        """``(ids, scores)`` for ``n`` ids, or the error (after the retries)."""
        payload: dict[str, Any] = {"query": query, "limit": n}
        if where is not None:
            payload["filter"] = where
        attempts = self.options.retries + 1
        for attempt in range(attempts):
            try:
                data = self._post(payload)
                if not isinstance(data, dict) or "ids" not in data:
                    raise ValueError('response must be a JSON object with "ids"')
                ids = _as_ids(data["ids"], "endpoint")
                scores = data.get("scores")
                if scores is not None and (not isinstance(scores, list) or len(scores) != len(ids)
                                           or not all(isinstance(s, int | float) and not isinstance(s, bool)
                                                      for s in scores)):
                    raise ValueError('"scores" must be a list of numbers, one per id')
                return ids, scores
            except _Retryable as exc:
                if attempt + 1 == attempts:
                    return f"{self.name}: {exc} (after {attempts} attempt(s))"
                self._sleep(self.options.backoff_s * (2 ** attempt))
            except (ValueError, TypeError) as exc:
                return f"{self.name}: {exc}"
        raise AssertionError("unreachable")

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        wheres = list(filters) if filters is not None else [None] * len(queries)
        if len(wheres) != len(queries):
            raise ValueError("filters must align with queries")
        if self.options.concurrency == 1 or len(queries) <= 1:
            out = [self._one(q, limit, w) for q, w in zip(queries, wheres, strict=True)]
        else:
            with ThreadPoolExecutor(max_workers=self.options.concurrency) as pool:
                out = list(pool.map(lambda qw: self._one(qw[0], limit, qw[1]), zip(queries, wheres, strict=True)))
        if self._tripped:
            asked = sum(1 for r in out if not (r.error or "").endswith("(the circuit breaker is open)"))
            raise RetrieverError(f"{self.name}: {self.options.breaker} cases in a row failed (last: "
                                 f"{self._last_error.removeprefix(self.name + ': ')}); stopping after {asked} of "
                                 f"{len(out)} cases instead of waiting out the rest (http_breaker); check the endpoint")
        return out


# ---- run:path --------------------------------------------------------------------------------

class RunRetriever:
    """Answers from a precomputed run, matched by case id (``search_cases``). ``search`` by query
    text works when the text names one case (or cases with identical rankings). Filters are
    the run's producer's business and are not applied here."""

    def __init__(self, *, run: Run, cases: Sequence[Case] = (),
                 chunk_to_card: Mapping[str, str] | None = None):
        self.run = run
        self.chunk_to_card = chunk_to_card
        self.name = f"run:{run.path}"
        self._by_query: dict[str, list[str]] = {}
        for case in cases:
            self._by_query.setdefault(case.query, []).append(case.id)

    def fingerprint(self) -> dict[str, Any]:
        return {"name": "run", "format": self.run.format, "sha256": self.run.sha256}

    def _answer(self, case_id: str, limit: int) -> RankedList:
        ranking = self.run.rankings.get(case_id)
        if ranking is None:
            return RankedList(error=MISSING_FROM_RUN)
        if ranking.error:
            return ranking
        cards, scores = cards_with_scores(ranking.ids, ranking.scores, limit, self.chunk_to_card)
        return RankedList(ids=cards, scores=scores, latency_ms=ranking.latency_ms)

    def search_cases(self, case_ids: Sequence[str], limit: int) -> list[RankedList]:
        return [self._answer(cid, limit) for cid in case_ids]

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        out = []
        for query in queries:
            ids = self._by_query.get(query, [])
            answers = {self._answer(cid, limit) for cid in ids}
            if not ids:
                out.append(RankedList(error="no case has this query text; run files are matched by case id"))
            elif len(answers) > 1:
                out.append(RankedList(error=f"cases {', '.join(ids)} share this query text but differ in the "
                                            "run; match by case id (search_cases)"))
            else:
                out.append(answers.pop())
        return out


def _is_timeout(exc: BaseException) -> bool:
    """A socket timeout, raised as itself or inside urllib's ``URLError``."""
    return isinstance(exc, TimeoutError) or (isinstance(exc, urllib.error.URLError)
                                             and isinstance(exc.reason, TimeoutError))
