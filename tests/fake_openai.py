"""A fake OpenAI-compatible embedding endpoint of our own, over real HTTP on 127.0.0.1.

``POST /v1/embeddings`` answers ``{"data": [{"index": i, "embedding": […]}, …]}`` with the
hashed bag of words of ``tests.fake_embedder`` (so its vectors are known independently of the
code under test), scaled by 3 (not unit length: the client must normalise) and listed in reverse
order (the client must place them by ``index``). It checks ``Authorization: Bearer KEY``, records
every request, and can be told to fail: ``fail_next`` HTTP statuses are answered first, and
``stall`` makes it hold the answer until the test ends (or ``release`` is set)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_embedder import DIM, bag_of_words


@dataclass
class FakeOpenAI:
    key: str
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)  # {"model", "inputs", "auth"}
    fail_next: list[int] = field(default_factory=list)
    stall: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    dim: int = DIM

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            auth = self.headers.get("Authorization", "")
            fake.requests.append({"path": self.path, "model": body.get("model"), "inputs": list(body["input"]),
                                  "auth": auth})
            if fake.stall:
                fake.release.wait(30)
                return
            if fake.fail_next:
                self._send(fake.fail_next.pop(0), {"error": {"message": "try again later"}})
                return
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": "not found"}})
                return
            if auth != f"Bearer {fake.key}":
                self._send(401, {"error": {"message": f"Incorrect API key provided: {auth[7:]}"}})
                return
            data = [{"object": "embedding", "index": i,
                     "embedding": [3.0 * float(x) for x in bag_of_words(t, fake.dim)]}
                    for i, t in enumerate(body["input"])]
            self._send(200, {"object": "list", "data": data[::-1], "model": body.get("model")})

    return Handler


@contextmanager
def fake_openai(key: str = "sk-test-0123456789abcdef") -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(key=key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
