"""A total deadline for one HTTP attempt, and the URL a message may show (``public_url``): the
``http(s)://`` retriever (``retrieve/custom.py``), the OpenAI-compatible embedder
(``embed/openai.py``), the store adapters. A leaf: it imports nothing of the package."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.parse
import urllib.request
from typing import Any


class Deadline:
    """A total deadline for one HTTP attempt. The socket timeout bounds each read, not the sum
    of them: at the deadline a timer shuts down every socket the attempt connected, which ends a
    blocked connect or read at once (the attempt then fails as "no complete answer within N s").
    The socket is taken when it connects — urllib drops the connection's own reference once the
    headers are in, so a watch on the connection would miss a body that trickles — and the body
    is read in pieces, the deadline looked at between them, whatever the server's pace."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
        if self.expired.is_set():
            self._expire()

    def _expire(self) -> None:
        self.expired.set()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()

    def close(self) -> None:
        """``cancel``, and close every socket the attempt connected (one cut off at the deadline is
        otherwise left for the garbage collector)."""
        self.cancel()
        with self._lock:
            sockets, self._sockets = list(self._sockets), []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def read(self, response: Any, limit: int) -> bytes:
        """At most ``limit`` bytes of the body, stopping at the deadline."""
        parts: list[bytes] = []
        held = 0
        while held < limit and not self.expired.is_set():
            piece = response.read1(min(65_536, limit - held))
            if not piece:
                break
            parts.append(piece)
            held += len(piece)
        left = getattr(response, "length", None)  # what Content-Length still promised
        if held < limit and not self.expired.is_set() and left:
            raise http.client.IncompleteRead(b"".join(parts), left)  # a cut body is a failed attempt
        return b"".join(parts)

    def opener(self) -> urllib.request.OpenerDirector:
        watch = self.watch

        class Connection(http.client.HTTPConnection):
            def connect(self) -> None:
                super().connect()
                watch(self.sock)

        class SecureConnection(http.client.HTTPSConnection):
            def connect(self) -> None:
                super().connect()
                watch(self.sock)

        class Http(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> Any:
                return self.do_open(Connection, req)

        class Https(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> Any:
                return self.do_open(SecureConnection, req, context=self._context)  # type: ignore[attr-defined]

        return urllib.request.build_opener(Http, Https)


def public_url(url: str) -> str:
    """The URL without credentials or query string (either may hold a secret): what a message or a
    config record may show of an endpoint (an HTTP retriever, an embedding endpoint, a store)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))
