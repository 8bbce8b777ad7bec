"""A fake Gitea / Forgejo REST API (v1) served over real HTTP on 127.0.0.1, for end-to-end tests of
the action in a Gitea Actions job.

It implements the endpoints ``forge/gitea/api.py`` calls, with Gitea's semantics where they matter:
a file read at a branch or a commit (``contents/{path}?ref=``: base64 ``content`` and the blob
``sha``, 404 when absent); a branch's head (``branches/{name}``: ``commit.id``); the multi-file
commit (``POST contents``), made on the branch's *current* head as Gitea does, refused with 422
when an ``update`` names a blob ``sha`` that is not the file's any more or a ``create`` names a file
that exists; a pull request's head and base; issue comments listed, created and edited (only by
their author); ``GET /user`` for a token, or refused (``refuse_identity``: 403, as Gitea answers a
token without the scope ``read:user``). Auth is ``Authorization: token …``; reads need a token
(a private repository), and two tokens are told apart as their scopes would: the comment token
(``write:issue``) gets 403 on a commit, the write token may commit. Every request is logged;
``before(method, regex, hook)`` runs a hook before a matching request.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.fake_repo import Logged, RequestLog, TreeHistory
from tests.helpers import local_server

BOT = {"id": 7, "login": "retrieval-gate-bot"}
WRITER = {"id": 8, "login": "retrieval-gate-writer"}
HUMAN = {"id": 1, "login": "alice"}


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeGitea(RequestLog, TreeHistory):
    token: str  # the bot's token: write:issue, read:repository
    write_token: str = ""  # the refresh's token: write:repository
    repository: str = "acme/rag"
    default_branch: str = "main"
    url: str = ""
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    log: list[Logged] = field(default_factory=list)
    hooks: list[tuple[str, re.Pattern[str], Callable[[], None]]] = field(default_factory=list)
    refuse_identity: bool = False  # True: GET /user is refused, as for a token without the scope read:user
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(100))
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        self.branches[self.default_branch] = self._new_commit(parent=None, changes={".gitkeep": b""}, message="init")

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v1"

    def add_pull(self, number: int, *, base_sha: str, head_sha: str = "f" * 40, fork: bool = False) -> None:
        head_repo = "someone/rag" if fork else self.repository
        self.pulls[number] = {"number": number, "state": "open",
                              "head": {"sha": head_sha, "ref": "feature", "repo": {"full_name": head_repo}},
                              "base": {"sha": base_sha, "ref": self.default_branch,
                                       "repo": {"full_name": self.repository}}}

    def add_comment(self, number: int, body: str, *, user: dict[str, Any]) -> dict[str, Any]:
        comment_id = next(self._ids)
        comment = {"id": comment_id, "body": body, "user": dict(user),
                   "html_url": f"{self.url}/{self.repository}/pulls/{number}#issuecomment-{comment_id}"}
        self.comments.setdefault(number, []).append(comment)
        return comment

    # -- HTTP -------------------------------------------------------------------------------------

    def handle(self, method: str, raw: str, body: Any, token: str | None) -> tuple[int, Any]:
        entry, path, query = self.record(method, raw, body, token)
        if not token or token not in (self.token, self.write_token):
            entry.status = 401
            return 401, {"message": "token is required", "url": f"{self.url}/api/swagger"}
        with self._lock:
            status, data = self._route(method, path, query, body, token)
        entry.status = status
        return status, data

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any,
               token: str) -> tuple[int, Any]:
        user = BOT if token == self.token else WRITER
        if path == "/api/v1/user" and method == "GET":
            if self.refuse_identity:
                return 403, {"message": "token does not have at least one of required scope(s), required=[read:user], "
                                        "token scope=write:issue,read:repository"}
            return 200, dict(user)
        prefix = f"/api/v1/repos/{self.repository}"
        if path != prefix and not path.startswith(prefix + "/"):
            return 404, {"message": "GetRepositoryByName", "errors": []}
        rest = path[len(prefix):]
        if rest == "" and method == "GET":
            return 200, {"full_name": self.repository, "default_branch": self.default_branch, "private": True}
        if (m := re.fullmatch(r"/contents/(.+)", rest)) and method == "GET":
            ref = (query.get("ref") or [self.default_branch])[0]
            data = self.commits.get(self.branches.get(ref, ref), {}).get(m.group(1))
            if data is None:
                return 404, {"message": "object does not exist [id: , rel_path: ]"}
            return 200, {"type": "file", "path": m.group(1), "name": m.group(1).rsplit("/", 1)[-1],
                         "encoding": "base64", "content": base64.b64encode(data).decode(), "sha": blob_sha(data)}
        if rest == "/contents" and method == "POST":
            return self._change_files(body, token)
        if (m := re.fullmatch(r"/branches/(.+)", rest)) and method == "GET":
            head = self.branches.get(m.group(1))
            return (200, {"name": m.group(1), "commit": {"id": head}}) if head else \
                (404, {"message": "branch does not exist"})
        if (m := re.fullmatch(r"/pulls/(\d+)", rest)) and method == "GET":
            pull = self.pulls.get(int(m.group(1)))
            return (200, pull) if pull else (404, {"message": "pull request does not exist"})
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m.group(1))
            if method == "GET":
                return 200, self.comments.get(number, [])
            if method == "POST":
                return 201, self.add_comment(number, body["body"], user=user)
        if (m := re.fullmatch(r"/issues/comments/(\d+)", rest)) and method == "PATCH":
            comment = next((c for cs in self.comments.values() for c in cs if c["id"] == int(m.group(1))), None)
            if comment is None:
                return 404, {"message": "comment does not exist"}
            if comment["user"]["login"] != user["login"]:
                return 403, {"message": "user should be the poster"}
            comment["body"] = body["body"]
            return 200, comment
        return 404, {"message": f"no route {method} {rest}"}

    def _change_files(self, body: Any, token: str) -> tuple[int, Any]:
        if token != self.write_token:
            return 403, {"message": "token does not have at least one of required scope(s): [write:repository]"}
        branch = body.get("branch") or self.default_branch
        head = self.branches.get(branch)
        if head is None:
            return 404, {"message": f"branch does not exist [name: {branch}]"}
        changes = {}
        for change in body["files"]:
            path, current = change["path"], self.commits[head].get(change["path"])
            if change["operation"] == "create" and current is not None:
                return 422, {"message": f"repository file already exists [path: {path}]"}
            if change["operation"] == "update" and (current is None or blob_sha(current) != change.get("sha")):
                return 422, {"message": f"sha does not match [given: {change.get('sha')}, expected: "
                                        f"{blob_sha(current) if current is not None else ''}]"}
            changes[path] = base64.b64decode(change["content"])
        sha = self._new_commit(parent=head, changes=changes, message=body["message"])
        self.branches[branch] = sha
        return 201, {"commit": {"sha": sha, "message": body["message"]},
                     "files": [{"path": p, "sha": blob_sha(d)} for p, d in changes.items()]}


@contextmanager
def serve_fake_gitea(*, token: str, write_token: str = "", **kwargs: Any) -> Iterator[FakeGitea]:
    fake = FakeGitea(token=token, write_token=write_token, **kwargs)

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            auth = self.headers.get("Authorization") or ""
            token = auth[6:] if auth.startswith("token ") else None
            status, data = fake.handle(self.command, self.path, json.loads(raw) if raw else None, token)
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, *args: Any) -> None:
            pass

    with local_server(Handler) as fake.url:
        yield fake
