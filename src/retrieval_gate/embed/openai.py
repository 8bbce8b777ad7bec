"""``model: openai:NAME`` — an OpenAI-compatible embedding endpoint (OpenAI, Azure's compatible
route, vLLM, Ollama, LiteLLM, text-embeddings-inference…): ``POST {base_url}/embeddings`` with
``{"model": NAME, "input": [texts]}`` and ``Authorization: Bearer KEY``; the answer's
``data[i].embedding`` (placed by ``data[i].index``) are the vectors, L2-normalised here (the
``Embedder`` contract). Wrapped in ``CachedEmbedder`` like every model, so a text is sent once.

Texts go in batches of at most ``max_batch`` (and of the suite's ``batch_size`` slices); each
request has a per-read timeout and a total deadline (connect + answer, ``http_deadline``), and
is retried after connection errors, timeouts, HTTP 429 and 5xx (``retries``, waiting
``backoff_s · 2^i``), never after another 4xx. The key comes from the environment (``${NAME}`` in
``options.api_key``) and is never shown: every message this module makes has it removed.

Identity: the model's name and the endpoint without credentials or query string (``model_sha256``
is the SHA-256 of ``openai:NAME@URL``): vectors of another endpoint or model never share the cache.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrieval_gate.embed.base import ModelIdentity
from retrieval_gate.errors import EmbedderError
from retrieval_gate.files import sha256_bytes
from retrieval_gate.http_deadline import Deadline, public_url

PREFIX = "openai:"
_MAX_ANSWER = 256 * 1024 * 1024  # bytes of one answer (2,048 vectors of 3,072 floats as JSON fit)


def is_api_model(name: str) -> bool:
    return name.strip().lower().startswith(PREFIX)



class _Retryable(Exception):
    pass


class OpenAIEmbedder:
    """``embed.base.Embedder`` over an OpenAI-compatible ``/embeddings`` endpoint."""

    def __init__(self, name: str, *, base_url: str | None, api_key: str | None, timeout_s: float = 30.0,
                 deadline_s: float = 120.0, retries: int = 2, backoff_s: float = 1.0, max_batch: int = 256,
                 sleep: Callable[[float], None] = time.sleep):
        self.full_name = name.strip()
        self.model = self.full_name[len(PREFIX):]
        if not self.model:
            raise EmbedderError("model openai:NAME: the name after openai: is empty")
        if not base_url or not base_url.lower().startswith(("http://", "https://")):
            raise EmbedderError(f"model {self.full_name} needs options.base_url, the endpoint's http(s):// address "
                                "(e.g. https://api.openai.com/v1)")
        if api_key is not None and "${" in api_key:
            raise EmbedderError(f"model {self.full_name}: options.api_key names an environment variable that was "
                                "not read (this command reads no environment)")
        self.url = base_url.rstrip("/") + "/embeddings"
        self._key = api_key or None
        self.timeout_s, self.deadline_s, self.retries, self.backoff_s = timeout_s, deadline_s, retries, backoff_s
        self.max_batch = max(1, max_batch)
        self._sleep = sleep
        self.requests = 0  # requests sent (retries included)

    def identity(self) -> ModelIdentity:
        where = public_url(self.url)
        return ModelIdentity(name=self.full_name, sha256=sha256_bytes(f"{PREFIX}{self.model}@{where}".encode()))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        parts = [self._batch(list(texts[i:i + self.max_batch])) for i in range(0, len(texts), self.max_batch)]
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        matrix = np.concatenate(parts).astype(np.float64)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(matrix)) or np.any(norms == 0):
            raise EmbedderError(f"{self._where()}: the endpoint returned a zero or non-finite vector")
        return (matrix / norms).astype(np.float32)

    def _where(self) -> str:
        return f"model {self.full_name} at {public_url(self.url)}"

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _batch(self, texts: list[str]) -> np.ndarray:
        attempts = self.retries + 1
        for attempt in range(attempts):
            try:
                return self._vectors(self._post({"model": self.model, "input": texts}), len(texts))
            except _Retryable as exc:
                if attempt + 1 == attempts:
                    raise EmbedderError(self._scrub(f"{self._where()}: {exc} (after {attempts} attempt(s))")) from None
                self._sleep(self.backoff_s * (2 ** attempt))
        raise AssertionError("unreachable")

    def _post(self, payload: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.url, data=json.dumps(payload).encode("utf-8"), headers=headers,
                                         method="POST")
        deadline = Deadline(self.deadline_s)
        self.requests += 1
        try:
            with deadline.opener().open(request, timeout=min(self.timeout_s, self.deadline_s)) as response:
                raw = deadline.read(response, _MAX_ANSWER + 1)
        except urllib.error.HTTPError as exc:
            try:
                # a 401/403's own message may quote part of the key: left out
                message = f"HTTP {exc.code} {exc.reason}" + ("" if exc.code in (401, 403) else _api_message(exc))
            finally:
                exc.close()  # the error holds the answer's connection
            if deadline.expired.is_set():
                raise _Retryable(f"no complete answer within {self.deadline_s:g} s") from None
            if exc.code == 429 or exc.code >= 500:
                raise _Retryable(message) from None
            hint = " (check options.api_key)" if exc.code in (401, 403) else ""
            raise EmbedderError(self._scrub(f"{self._where()}: {message}{hint}")) from None
        except (OSError, http.client.HTTPException) as exc:
            if deadline.expired.is_set() or isinstance(exc, TimeoutError) or (
                    isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, TimeoutError)):
                raise _Retryable(f"no complete answer within {min(self.timeout_s, self.deadline_s):g} s") from None
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise _Retryable(f"cannot connect: {reason}") from None
        finally:
            deadline.close()
        if deadline.expired.is_set():
            raise _Retryable(f"no complete answer within {self.deadline_s:g} s")
        if len(raw) > _MAX_ANSWER:
            raise EmbedderError(f"{self._where()}: the answer is longer than {_MAX_ANSWER:,} bytes")
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise EmbedderError(f"{self._where()}: the answer is not JSON") from None

    def _vectors(self, data: Any, n: int) -> np.ndarray:
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or len(items) != n:
            got = len(items) if isinstance(items, list) else "no"
            raise EmbedderError(f"{self._where()}: expected {{\"data\": [...]}} with {n} embeddings, got {got}")
        rows: list[Any] = [None] * n
        for pos, item in enumerate(items):
            index = item.get("index", pos) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n or rows[index] is not None
                    or not isinstance(vector, list) or not vector
                    or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector)):
                raise EmbedderError(f"{self._where()}: item {pos} of the answer is no embedding "
                                    "(expected {\"index\": i, \"embedding\": [numbers]}; base64 is not asked for)")
            rows[index] = vector
        if len({len(r) for r in rows}) != 1:
            raise EmbedderError(f"{self._where()}: the answer's embeddings have different lengths")
        return np.asarray(rows, dtype=np.float64)


def _api_message(exc: urllib.error.HTTPError) -> str:
    """The error's own one-line message (OpenAI's ``{"error": {"message": …}}``), clipped."""
    try:
        body = json.loads(exc.read(4096).decode("utf-8", "replace"))
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
    except Exception:
        return ""
    if not isinstance(message, str) or not message.strip():
        return ""
    line = message.strip().splitlines()[0]
    return f": {line[:200]}{'…' if len(line) > 200 else ''}"
