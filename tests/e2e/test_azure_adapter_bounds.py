"""The Azure DevOps adapter's bounds, over real sockets: a server that never answers is cut off by
the total deadline; a GET that got a 503 (or lost its answer) is asked again, a 429's Retry-After
is honoured; a push is never re-sent; errors name the variable and hold no token."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

import pytest
from pydantic import SecretStr

from retrieval_gate.errors import ForgeError, PermissionDenied
from retrieval_gate.forge.azure.api import AzureRepo
from retrieval_gate.publish.untrusted import scrub_text
from tests.helpers import local_server

TOKEN = "azTOKENforBOUNDS0123456789"


def _repo(url: str, *, deadline_s: float = 120, waits: list[float] | None = None) -> AzureRepo:
    return AzureRepo(comment_token=SecretStr(TOKEN), write_token=SecretStr(""),
                     api_url=f"{url}/org/proj/_apis/git/repositories/rag",
                     scrub=lambda text: scrub_text(text, secrets=[TOKEN]), log=lambda line: None,
                     timeout=30, deadline_s=deadline_s, sleep=(waits.append if waits is not None else lambda s: None))


@contextmanager
def _serve(answers: list[tuple[int, dict[str, str], bytes]]) -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            seen.append(f"{self.command} {self.path.split('?')[0]}")
            status, headers, body = answers.pop(0) if len(answers) > 1 else answers[0]
            if status == 0:  # drop the connection without an answer
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _serve

        def log_message(self, *args: object) -> None:
            pass

    with local_server(Handler) as url:
        yield url, seen


REFS = b'{"value": [{"name": "refs/heads/main", "objectId": "' + b"a" * 40 + b'"}]}'


def test_a_get_that_got_a_503_then_lost_its_answer_is_asked_again() -> None:
    waits: list[float] = []
    with _serve([(503, {}, b"{}"), (0, {}, b""), (200, {}, REFS)]) as (url, seen):
        assert _repo(url, waits=waits).branch_head(branch="main") == "a" * 40
    assert seen == ["GET /org/proj/_apis/git/repositories/rag/refs"] * 3 and waits == [1.0, 2.0]


def test_a_429_retry_after_is_honoured_and_bounded() -> None:
    waits: list[float] = []
    with _serve([(429, {"Retry-After": "7"}, b"{}"), (200, {}, REFS)]) as (url, _):
        _repo(url, waits=waits).branch_head(branch="main")
    assert waits == [7.0]
    with _serve([(429, {"Retry-After": "3600"}, b"{}"), (200, {}, REFS)]) as (url, _):
        waits.clear()
        _repo(url, waits=waits).branch_head(branch="main")
    assert waits == [300.0]  # forge.wait.MAX_WAIT_S


def test_a_server_that_never_answers_is_cut_off_by_the_total_deadline() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        with pytest.raises(ForgeError, match=r"no complete answer from the Azure DevOps API within 1 s"):
            _repo(f"http://127.0.0.1:{listener.getsockname()[1]}", deadline_s=1).branch_head(branch="main")
    finally:
        listener.close()


def test_a_refused_token_is_named_and_never_shown() -> None:
    answer = b'{"message": "TF400813: not authorized ' + TOKEN.encode() + b'"}'
    with _serve([(401, {}, answer)]) as (url, _), pytest.raises(PermissionDenied) as caught:
        _repo(url).branch_head(branch="main")
    assert "SYSTEM_ACCESSTOKEN was refused" in str(caught.value) and TOKEN not in str(caught.value)


def test_a_push_is_never_sent_twice() -> None:
    with _serve([(404, {}, b"{}"), (503, {}, b"{}"), (200, {}, REFS)]) as (url, seen):
        repo = AzureRepo(comment_token=SecretStr(TOKEN), write_token=SecretStr(TOKEN + "w"),
                         api_url=f"{url}/org/proj/_apis/git/repositories/rag", scrub=lambda text: text,
                         log=lambda line: None, sleep=lambda s: None)
        with pytest.raises(ForgeError, match="HTTP 503"):  # the branch did not move: it did not land
            repo.commit_files(branch="main", parent="a" * 40, files={"b.json": "{}"}, message="m")
    assert [s for s in seen if s.startswith("POST")] == ["POST /org/proj/_apis/git/repositories/rag/pushes"]
