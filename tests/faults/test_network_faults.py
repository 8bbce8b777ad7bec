"""Loopback servers that drip, cut, reset and hang — the GitHub API (the fake, over real HTTP)
and a user's HTTP retriever: every wait ends at its deadline, a lost GET answer is asked again, a
write whose answer was lost is re-read and reported as landed, and a dead endpoint trips the
circuit breaker instead of being waited out case by case."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from retrieval_gate.errors import ForgeError, RetrieverError
from retrieval_gate.forge.github.api import GitHubRepo
from retrieval_gate.http_deadline import Deadline
from retrieval_gate.publish.untrusted import scrub_text
from retrieval_gate.retrieve import custom
from retrieval_gate.retrieve.custom import HttpRetriever
from retrieval_gate.retrieve.settings import HttpSettings
from tests.e2e.fake_github import FakeGitHub, serve_fake_github
from tests.faults.conftest import Warm, eval_args, run_cli
from tests.helpers import local_server

TOKEN = "ghp_faultsuite0123456789abcdef0123456789"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve_fake_github(token=TOKEN) as fake:
        fake.commit("main", {"baselines/default.json": json.dumps({"x": list(range(200))})})
        yield fake


def repo_of(github: FakeGitHub, logs: list[str], **kw: Any) -> GitHubRepo:
    options = {"retries": 1, **kw}
    return GitHubRepo(token=SecretStr(TOKEN), scrub=masking(TOKEN),
                      repository=github.repository, api_url=github.api_url, backoff_factor=0.0,
                      seconds_between_writes=None, log=logs.append, **options)


def test_a_dripped_github_answer_ends_at_the_call_deadline(github: FakeGitHub) -> None:
    github.deliver("GET", "/contents/", "drip", times=10, pace_s=0.2)
    logs: list[str] = []
    repo = repo_of(github, logs, deadline_s=2.0)
    with pytest.raises(ForgeError, match=r"no complete answer from the GitHub API within 2 s") as caught:
        repo.get_file(path="baselines/default.json", ref="main")
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize("how", ["cut", "reset"])
def test_a_lost_get_answer_is_asked_again(github: FakeGitHub, how: str) -> None:
    github.deliver("GET", "/contents/", how, times=1)
    logs: list[str] = []
    got = repo_of(github, logs).get_file(path="baselines/default.json", ref="main")
    assert got is not None and json.loads(got.text) == {"x": list(range(200))}
    if how == "cut":  # a reset before any answer urllib3's own retry already covers; a cut body is ours
        assert any("the answer was cut off" in line and "asking again" in line for line in logs), logs


def test_a_get_lost_every_time_gives_up_in_one_line(github: FakeGitHub) -> None:
    github.deliver("GET", "/git/ref", "reset", times=10)
    with pytest.raises(ForgeError, match="giving up after 3 attempts") as caught:
        repo_of(github, []).branch_head(branch="main")
    assert "\n" not in str(caught.value)


def test_a_ref_update_whose_answer_was_lost_is_reread_and_reported_landed(github: FakeGitHub) -> None:
    logs: list[str] = []
    repo = repo_of(github, logs, retries=0)  # no transport retry: the adapter itself must find out
    parent = repo.branch_head(branch="main")
    github.deliver("PATCH", "/git/refs/heads/main", "reset", times=1)  # applied, then the answer is lost
    sha = repo.commit_files(branch="main", parent=parent, files={"baselines/default.json": "{}\n"}, message="m")
    assert repo.branch_head(branch="main") == sha
    assert github.file_at("main", "baselines/default.json") == "{}\n"
    assert any("the write landed" in line for line in logs), logs


def test_a_comment_whose_answer_was_lost_is_not_posted_twice(github: FakeGitHub) -> None:
    logs: list[str] = []
    repo = repo_of(github, logs, retries=0)
    github.deliver("POST", "/issues/7/comments", "reset", times=1)
    posted = repo.upsert_comment(number=7, marker="<!-- rg -->", body="<!-- rg --> hello")
    bodies = [r.body for r in github.requests("POST", "/issues/7/comments")]
    assert len(bodies) == 1 and posted.id > 0


# ---- the HTTP retriever ------------------------------------------------------------------------

ANSWER = json.dumps({"ids": ["a", "b", "c"]}).encode()


@contextmanager
def retriever_server(mode: str, *, fail_first: int = 10**9) -> Iterator[tuple[str, list[str]]]:
    """``drip``: headers, then one body byte every 0.5 s; ``hang``: read the request, answer
    nothing; ``reset``: RST mid-body; the first ``fail_first`` requests misbehave, then ``ok``."""
    seen: list[str] = []
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append(mode)
            bad = len(seen) <= fail_first
            if bad and mode == "hang":
                stop.wait(30)
                self.close_connection = True
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(ANSWER)))
            self.end_headers()
            if bad and mode == "reset":
                self.wfile.write(ANSWER[:5])
                self.wfile.flush()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            if bad and mode == "drip":
                for at in range(len(ANSWER)):
                    if stop.wait(0.5):
                        break
                    try:
                        self.wfile.write(ANSWER[at:at + 1])
                        self.wfile.flush()
                    except OSError:
                        break
                self.close_connection = True
                return
            self.wfile.write(ANSWER)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with local_server(Handler) as url:
        try:
            yield f"{url}/search", seen
        finally:
            stop.set()  # a hanging handler lets go before the server shuts down


@pytest.mark.parametrize("mode", ["drip", "hang"])
def test_a_trickling_or_silent_endpoint_fails_each_attempt_at_its_deadline(mode: str) -> None:
    with retriever_server(mode) as (url, _seen):
        retriever = HttpRetriever(url=url, options=HttpSettings(timeout_s=5.0, deadline_s=1.0, retries=0,
                                                               concurrency=2, breaker=0))
        began = time.monotonic()
        out = retriever.search(["q1", "q2"], 3)
    assert all("no complete answer within 1 s" in (r.error or "") for r in out), out
    assert time.monotonic() - began < 60  # safety net only: the deadline is 1 s per attempt


def test_a_silent_endpoint_is_named_a_deadline_even_when_the_sockets_timeout_fires_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The socket's timeout is the deadline when the deadline is the shorter: on a loaded machine
    it may fire before the deadline's timer, and the case's error must still name the deadline."""

    class LateTimer(Deadline):
        def __init__(self, seconds: float):
            super().__init__(seconds + 30)  # the timer never fires within the attempt

    monkeypatch.setattr(custom, "_Deadline", LateTimer)
    with retriever_server("hang") as (url, _seen):
        out = HttpRetriever(url=url, options=HttpSettings(timeout_s=5.0, deadline_s=1.0, retries=0, concurrency=1,
                                                         breaker=0)).search(["q1"], 3)
    assert "no complete answer within 1 s" in (out[0].error or ""), out


def test_a_reset_mid_body_is_retried_and_answers_as_a_clean_endpoint() -> None:
    with retriever_server("reset", fail_first=1) as (url, seen):
        out = HttpRetriever(url=url, options=HttpSettings(retries=2, backoff_s=0.0, concurrency=1)).search(["q"], 3)
    assert out[0].error is None and out[0].ids == ("a", "b", "c") and len(seen) == 2


def test_the_circuit_breaker_stops_after_n_failed_cases_in_a_row() -> None:
    with retriever_server("drip") as (url, seen):
        retriever = HttpRetriever(url=url, options=HttpSettings(deadline_s=0.5, retries=0, concurrency=1, breaker=2))
        with pytest.raises(RetrieverError, match=r"2 cases in a row failed .*stopping after 2 of 6 cases") as caught:
            retriever.search([f"q{i}" for i in range(6)], 3)
    assert len(seen) == 2 and "\n" not in str(caught.value)


def test_an_eval_against_a_dead_endpoint_exits_2_in_one_line(warm: Warm, tmp_path: Path) -> None:
    with retriever_server("hang") as (url, _seen):
        out = tmp_path / "r.json"
        done = run_cli(eval_args(warm.suite, tmp_path / "store", out, "--retriever", url,
                                 "--option", "http_deadline_s=1", "--option", "http_retries=0"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "5 cases in a row failed" in errors[0], done.stderr
    assert not out.exists() and "Traceback" not in done.stderr


def masking(*secrets: object) -> object:
    """The adapter's scrubber: the one scrubber (``scrub_text``) over these secrets."""
    values = [s.get_secret_value() if hasattr(s, "get_secret_value") else str(s) for s in secrets]
    return lambda text: scrub_text(text, secrets=values)
