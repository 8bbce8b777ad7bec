"""A fake Azure DevOps Git REST API (7.1) served over real HTTP on 127.0.0.1, for end-to-end tests
of the action in an Azure pipeline.

It implements the endpoints ``forge/azure/api.py`` calls, with Azure DevOps' semantics where they
matter: items read at a commit or a branch (``versionDescriptor``, JSON with ``content`` and
``objectId``, 404 when absent); a push of one commit whose ref update names ``oldObjectId``, refused
with 409 (TF401028) when the branch moved since; a pull request's ``lastMergeTargetCommit``; threads
with comments, created and edited; ``connectionData`` naming the token's identity, or refusing it
(``refuse_identity``). Auth is Basic with the token as the password; two tokens are told apart as
the build service's permissions would: the comment token (*Contribute to pull requests*) gets 403
(TF401027) on a push, the write token may push. Reads need a token (a private project). Every
request is logged; ``before(method, regex, hook)`` runs a hook before a matching request.
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

BUILD_SERVICE = {"id": "0b1d-build-service", "displayName": "rag Build Service (acme)"}
WRITER = {"id": "0b1d-writer", "displayName": "retrieval-gate refresh"}
HUMAN = {"id": "a11ce", "displayName": "Alice"}


@dataclass
class FakeAzure(RequestLog, TreeHistory):
    token: str  # System.AccessToken: Contribute to pull requests
    write_token: str = ""
    organization: str = "acme"
    project: str = "Retrieval Project"
    repo: str = "rag"
    default_branch: str = "main"
    url: str = ""
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    threads: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    log: list[Logged] = field(default_factory=list)
    hooks: list[tuple[str, re.Pattern[str], Callable[[], None]]] = field(default_factory=list)
    refuse_identity: bool = False  # True: connectionData is refused (the token's identity cannot be read)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        self.branches[self.default_branch] = self._new_commit(parent=None, changes={".gitkeep": b""}, message="init")

    @property
    def collection_url(self) -> str:
        return f"{self.url}/{self.organization}/"

    def add_pull(self, number: int, *, target_sha: str, source_sha: str = "f" * 40) -> None:
        self.pulls[number] = {"pullRequestId": number, "status": "active", "targetRefName": "refs/heads/main",
                              "sourceRefName": "refs/heads/feature",
                              "lastMergeTargetCommit": {"commitId": target_sha},
                              "lastMergeSourceCommit": {"commitId": source_sha}}

    def add_thread(self, number: int, content: str, *, author: dict[str, Any]) -> dict[str, Any]:
        thread = {"id": next(self._ids), "status": "active",
                  "comments": [{"id": 1, "parentCommentId": 0, "content": content, "author": dict(author),
                                "commentType": "text"}]}
        self.threads.setdefault(number, []).append(thread)
        return thread

    # -- HTTP -------------------------------------------------------------------------------------

    def handle(self, method: str, raw: str, body: Any, token: str | None) -> tuple[int, Any]:
        entry, path, query = self.record(method, raw, body, token)
        if token not in (self.token, self.write_token) or not token:
            entry.status = 401
            return 401, {"message": "TF400813: The user is not authorized to access this resource."}
        if (query.get("api-version") or [""])[0] != "7.1":
            entry.status = 400
            return 400, {"message": "api-version missing"}
        with self._lock:
            status, data = self._route(method, path, query, body, token)
        entry.status = status
        return status, data

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any,
               token: str) -> tuple[int, Any]:
        if path == f"/{self.organization}/_apis/connectionData":
            if self.refuse_identity:
                return 403, {"message": "TF400813: The user is not authorized to access this resource."}
            return 200, {"authenticatedUser": BUILD_SERVICE if token == self.token else WRITER}
        prefix = f"/{self.organization}/{self.project}/_apis/git/repositories/{self.repo}"
        if not path.startswith(prefix):
            return 404, {"message": "TF401019: The Git repository does not exist"}
        rest = path[len(prefix):]
        get = lambda name: (query.get(name) or [""])[0]  # noqa: E731
        if rest == "" and method == "GET":
            return 200, {"id": "r1", "name": self.repo, "defaultBranch": f"refs/heads/{self.default_branch}"}
        if rest == "/items" and method == "GET":
            ref = get("versionDescriptor.version")
            sha = self.branches.get(ref) if get("versionDescriptor.versionType") == "branch" else ref
            data = self.commits.get(sha or "", {}).get(get("path").lstrip("/"))
            if data is None:
                return 404, {"message": "TF401174: The item could not be found"}
            return 200, {"objectId": hashlib.sha1(data).hexdigest(), "path": get("path"), "content": data.decode(),
                         "commitId": sha}
        if rest == "/refs" and method == "GET":
            name = get("filter").removeprefix("heads/")
            head = self.branches.get(name)
            return 200, {"value": [{"name": f"refs/heads/{name}", "objectId": head}] if head else [], "count": 1}
        if rest == "/pushes" and method == "POST":
            return self._push(body, token)
        if (m := re.fullmatch(r"/pullRequests/(\d+)", rest)) and method == "GET":
            pull = self.pulls.get(int(m.group(1)))
            return (200, pull) if pull else (404, {"message": "TF401180: The requested pull request was not found"})
        if m := re.fullmatch(r"/pullRequests/(\d+)/threads", rest):
            number = int(m.group(1))
            if method == "GET":
                return 200, {"value": self.threads.get(number, []), "count": len(self.threads.get(number, []))}
            author = BUILD_SERVICE if token == self.token else WRITER
            thread = self.add_thread(number, body["comments"][0]["content"], author=author)
            return 200, thread
        if (m := re.fullmatch(r"/pullRequests/(\d+)/threads/(\d+)/comments/(\d+)", rest)) and method == "PATCH":
            thread = next((t for t in self.threads.get(int(m.group(1)), []) if t["id"] == int(m.group(2))), None)
            if thread is None:
                return 404, {"message": "thread not found"}
            comment = thread["comments"][int(m.group(3)) - 1]
            if comment["author"]["id"] != BUILD_SERVICE["id"]:
                return 403, {"message": "TF401181: not the author"}
            comment["content"] = body["content"]
            return 200, comment
        return 404, {"message": f"no route {method} {rest}"}

    def _push(self, body: Any, token: str) -> tuple[int, Any]:
        if token != self.write_token:
            return 403, {"message": "TF401027: You need the Git 'GenericContribute' permission to perform this action."}
        (update,) = body["refUpdates"]
        branch = update["name"].removeprefix("refs/heads/")
        if self.branches.get(branch) != update["oldObjectId"]:
            return 409, {"message": "TF401028: The reference 'refs/heads/main' has already been updated by another "
                                    "client, so you cannot update it. Please try again."}
        (commit,) = body["commits"]
        changes = {}
        for change in commit["changes"]:
            path = change["item"]["path"].lstrip("/")
            exists = path in self.commits[update["oldObjectId"]]
            if (change["changeType"] == "add") == exists:
                state = "exists" if exists else "does not exist"
                return 400, {"message": f"TF402455: {change['changeType']} of {path}, which {state}"}
            changes[path] = change["newContent"]["content"].encode()
        sha = self._new_commit(parent=update["oldObjectId"], changes=changes, message=commit["comment"])
        self.branches[branch] = sha
        return 201, {"pushId": next(self._ids), "commits": [{"commitId": sha, "comment": commit["comment"]}],
                     "refUpdates": [{"name": update["name"], "oldObjectId": update["oldObjectId"], "newObjectId": sha}]}


@contextmanager
def serve_fake_azure(*, token: str, write_token: str = "", **kwargs: Any) -> Iterator[FakeAzure]:
    fake = FakeAzure(token=token, write_token=write_token, **kwargs)

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            auth = self.headers.get("Authorization") or ""
            token = base64.b64decode(auth[6:]).decode().partition(":")[2] if auth.startswith("Basic ") else None
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
