"""A fake GitHub REST API served over real HTTP on 127.0.0.1, for end-to-end tests of the action.

It implements just the endpoints PyGithub calls for us (see forge/github/api.py), with GitHub's
semantics where they matter: contents reads at a branch or a commit sha; the Git Data API —
blobs, trees on a base tree (entries by blob sha or inline content), commits with parents, and a
ref update refused with 422 "Update is not a fast forward" unless the ref's commit is an ancestor
of the new one; issue comments paginated 30 a page with ``Link`` headers; ``GET /user`` refused
(403) as it is for the Actions ``GITHUB_TOKEN``.

Faults are injected per request: ``fail(...)`` answers N matching requests with a canned status;
``before(...)`` runs a hook before a matching request is handled (e.g. another writer commits).
Every request is logged (method, path, query, JSON body, Authorization header).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.helpers import local_server

ACTIONS_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
HUMAN = {"login": "octocat", "id": 1, "type": "User"}
OTHER_BOT = {"login": "other-app[bot]", "id": 7, "type": "Bot"}


def blob_sha(data: bytes) -> str:
    """Git's blob id: sha1 of ``blob <size>\\0<data>``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Logged:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    authorization: str | None
    status: int = 0


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    times: int
    status: int = 0
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hook: Callable[[], None] | None = None


class FakeGitHub:
    """State of one fake repository plus the HTTP server that serves it."""

    def __init__(self, *, token: str, repository: str = "acme/rag", default_branch: str = "main",
                 user: dict[str, Any] | None = None, per_page: int = 30,
                 large_file_threshold: int = 1_000_000) -> None:
        self.token = token
        self.repository = repository
        self.default_branch = default_branch
        self.user = user  # None: GET /user answers 403 (as for GITHUB_TOKEN)
        self.author = dict(user) if user is not None else dict(ACTIONS_BOT)  # who our writes come from
        self.per_page = per_page
        self.large_file_threshold = large_file_threshold
        self.commits: dict[str, dict[str, bytes]] = {}
        self.commit_messages: dict[str, str] = {}
        self.parents: dict[str, list[str]] = {}
        self.trees: dict[str, dict[str, bytes]] = {}  # Git Data API trees (whole file maps)
        self.blobs: dict[str, bytes] = {}
        self.branches: dict[str, str] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: dict[int, dict[str, Any]] = {}
        self.log: list[Logged] = []
        self._faults: list[_Fault] = []
        self._wire: list[list[Any]] = []  # deliver(): answers spoilt on the wire
        self._ids = itertools.count(1000)
        self._lock = threading.RLock()
        self.api_url = ""
        self.commit(default_branch, {"README.md": "# rag\n"}, message="initial")

    # -- state helpers for tests ------------------------------------------------------------------

    def commit(self, branch: str, files: dict[str, str | None], *, message: str = "change") -> str:
        """Commit ``files`` (None deletes) on ``branch`` (created from the default branch)."""
        with self._lock:
            parent = self.branches.get(branch) or self.branches.get(self.default_branch)
            tree = dict(self.commits[parent]) if parent else {}
            for path, text in files.items():
                if text is None:
                    tree.pop(path, None)
                else:
                    tree[path] = text.encode("utf-8")
            sha = self._new_commit(tree, message=message, parents=[parent] if parent else [])
            self.branches[branch] = sha
            return sha

    def _new_commit(self, tree: dict[str, bytes], *, message: str, parents: list[str]) -> str:
        sha = hashlib.sha1(f"{parents}:{message}:{next(self._ids)}".encode()).hexdigest()
        self.commits[sha] = tree
        self.commit_messages[sha] = message
        self.parents[sha] = parents
        return sha

    def is_ancestor(self, old: str, new: str) -> bool:
        """``old`` is ``new`` or one of its ancestors."""
        seen, todo = set(), [new]
        while todo:
            sha = todo.pop()
            if sha == old:
                return True
            if sha not in seen:
                seen.add(sha)
                todo.extend(self.parents.get(sha, []))
        return False

    def file_at(self, ref: str, path: str) -> str | None:
        with self._lock:
            tree = self._tree(ref)
            data = tree.get(path) if tree is not None else None
            return data.decode("utf-8") if data is not None else None

    def add_comment(self, issue: int, body: str, *, user: dict[str, Any] | None = None) -> dict[str, Any]:
        with self._lock:
            comment_id = next(self._ids)
            comment = {
                "id": comment_id,
                "node_id": f"IC_{comment_id}",
                "body": body,
                "user": dict(user or HUMAN),
                "html_url": f"https://github.example/{self.repository}/pull/{issue}#issuecomment-{comment_id}",
                "url": f"{self.api_url}/repos/{self.repository}/issues/comments/{comment_id}",
                "issue_url": f"{self.api_url}/repos/{self.repository}/issues/{issue}",
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
            }
            self.comments.setdefault(issue, []).append(comment)
            return comment

    def add_pull(self, number: int, *, head_sha: str, base_sha: str, base_ref: str = "main",
                 head_repo: str | None = None) -> None:
        self.pulls[number] = {
            "number": number,
            "head": {"sha": head_sha, "ref": "feature", "repo": {"full_name": head_repo or self.repository}},
            "base": {"sha": base_sha, "ref": base_ref, "repo": {"full_name": self.repository}},
        }

    def fail(self, method: str, path_regex: str, *, status: int, body: Any = None, times: int = 1,
             headers: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests matching method and path with ``status``."""
        self._faults.append(_Fault(method, re.compile(path_regex), times, status,
                                   body if body is not None else {"message": f"injected {status}"},
                                   dict(headers or {})))

    def before(self, method: str, path_regex: str, hook: Callable[[], None], *, times: int = 1) -> None:
        """Run ``hook`` before handling the next ``times`` matching requests."""
        self._faults.append(_Fault(method, re.compile(path_regex), times, hook=hook))

    def deliver(self, method: str, path_regex: str, how: str, *, times: int = 1, pace_s: float = 0.5) -> None:
        """Spoil how the next ``times`` matching answers travel (the request itself is handled):
        ``drip`` sends the body one byte per ``pace_s``; ``cut`` sends half the body, then closes;
        ``reset`` closes the connection (RST) before any answer."""
        self._wire.append([method, re.compile(path_regex), how, times, pace_s])

    def wire_fault(self, method: str, path: str) -> tuple[str, float] | None:
        with self._lock:
            for fault in self._wire:
                if fault[0] == method and fault[1].search(path) and fault[3] > 0:
                    fault[3] -= 1
                    return fault[2], fault[4]
        return None

    def requests(self, method: str | None = None, path_regex: str | None = None) -> list[Logged]:
        return [r for r in self.log
                if (method is None or r.method == method) and (path_regex is None or re.search(path_regex, r.path))]

    # -- request handling -------------------------------------------------------------------------

    def _tree(self, ref: str) -> dict[str, bytes] | None:
        ref = ref.removeprefix("refs/heads/")
        if ref in self.branches:
            return self.commits[self.branches[ref]]
        return self.commits.get(ref)

    def handle(self, method: str, raw_path: str, body: Any,
               authorization: str | None) -> tuple[int, Any, dict[str, str]]:
        parts = urlsplit(raw_path)
        path, query = parts.path, parse_qs(parts.query)
        entry = Logged(method, path, query, body, authorization)
        with self._lock:
            self.log.append(entry)
            status, payload, headers = self._dispatch(method, path, query, body, authorization)
            entry.status = status
            return status, payload, headers

    def _dispatch(self, method: str, path: str, query: dict[str, list[str]], body: Any,
                  authorization: str | None) -> tuple[int, Any, dict[str, str]]:
        if authorization not in (f"token {self.token}", f"Bearer {self.token}"):
            return 401, {"message": "Bad credentials"}, {}
        for fault in list(self._faults):
            if fault.method == method and fault.pattern.search(path) and fault.times > 0:
                fault.times -= 1
                if fault.hook is not None:
                    fault.hook()
                    continue
                return fault.status, fault.body, fault.headers
        repo = f"/repos/{self.repository}"
        if method == "GET" and path == "/user":
            if self.user is None:
                return 403, {"message": "Resource not accessible by integration"}, {}
            return 200, self.user, {}
        if not path.startswith(repo):
            return 404, {"message": "Not Found"}, {}
        rest = path[len(repo):]
        if method == "GET" and rest == "":
            return 200, {"full_name": self.repository, "name": self.repository.split("/")[1],
                         "default_branch": self.default_branch, "url": self.api_url + repo}, {}
        if m := re.fullmatch(r"/contents/(.+)", rest):
            file_path = unquote(m.group(1))
            if method == "GET":
                return self._get_contents(file_path, query.get("ref", [self.default_branch])[0])
        if rest.startswith("/git/") and (answer := self._git_data(method, rest, body)) is not None:
            return answer
        if method == "GET" and (m := re.fullmatch(r"/git/blobs/([0-9a-f]+)", rest)):
            if m.group(1) in self.blobs:
                data = self.blobs[m.group(1)]
                return 200, {"sha": m.group(1), "size": len(data), "encoding": "base64",
                             "content": base64.encodebytes(data).decode()}, {}
            for tree in self.commits.values():
                for data in tree.values():
                    if blob_sha(data) == m.group(1):
                        return 200, {"sha": m.group(1), "size": len(data), "encoding": "base64",
                                     "content": base64.encodebytes(data).decode()}, {}
            return 404, {"message": "Not Found"}, {}
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            issue = int(m.group(1))
            if method == "GET":
                return self._list_comments(issue, query)
            if method == "POST":
                comment = self.add_comment(issue, body["body"], user=self.author)
                return 201, comment, {}
        if method == "PATCH" and (m := re.fullmatch(r"/issues/comments/(\d+)", rest)):
            for comments in self.comments.values():
                for comment in comments:
                    if comment["id"] == int(m.group(1)):
                        comment["body"] = body["body"]
                        comment["updated_at"] = "2026-01-02T00:00:00Z"
                        return 200, comment, {}
            return 404, {"message": "Not Found"}, {}
        if method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)", rest)):
            pull = self.pulls.get(int(m.group(1)))
            return (200, pull, {}) if pull else (404, {"message": "Not Found"}, {})
        return 404, {"message": f"fake GitHub: no route for {method} {path}"}, {}

    # -- the Git Data API (one commit for several files) -------------------------------------------

    def _url(self, tail: str) -> str:
        return f"{self.api_url}/repos/{self.repository}{tail}"

    def _ref_json(self, branch: str) -> dict[str, Any]:
        sha = self.branches[branch]
        return {"ref": f"refs/heads/{branch}", "url": self._url(f"/git/refs/heads/{branch}"),
                "object": {"sha": sha, "type": "commit", "url": self._url(f"/git/commits/{sha}")}}

    def _tree_sha(self, tree: dict[str, bytes]) -> str:
        listing = "".join(f"{path}\0{blob_sha(data)}\n" for path, data in sorted(tree.items()))
        sha = hashlib.sha1(listing.encode()).hexdigest()
        self.trees[sha] = tree
        return sha

    def _commit_json(self, sha: str) -> dict[str, Any]:
        tree = self._tree_sha(self.commits[sha])
        return {"sha": sha, "url": self._url(f"/git/commits/{sha}"), "message": self.commit_messages[sha],
                "tree": {"sha": tree, "url": self._url(f"/git/trees/{tree}")},
                "parents": [{"sha": p, "url": self._url(f"/git/commits/{p}")} for p in self.parents[sha]]}

    def _git_data(self, method: str, rest: str, body: Any) -> tuple[int, Any, dict[str, str]] | None:
        """GET ref (PyGithub's ``/git/ref/``) and commit; POST blob, tree, commit; PATCH ref. None: not ours."""
        if method == "GET" and (m := re.fullmatch(r"/git/refs?/heads/(.+)", rest)):
            branch = unquote(m.group(1))
            return (200, self._ref_json(branch), {}) if branch in self.branches else (404, {"message": "Not Found"}, {})
        if method == "GET" and (m := re.fullmatch(r"/git/commits/([0-9a-f]{40})", rest)):
            return (200, self._commit_json(m.group(1)), {}) if m.group(1) in self.commits else (
                404, {"message": "Not Found"}, {})
        if method == "POST" and rest == "/git/blobs":
            data = body["content"].encode("utf-8") if body.get("encoding", "utf-8") == "utf-8" \
                else base64.b64decode(body["content"])
            self.blobs[blob_sha(data)] = data
            return 201, {"sha": blob_sha(data), "url": self._url(f"/git/blobs/{blob_sha(data)}")}, {}
        if method == "POST" and rest == "/git/trees":
            base = body.get("base_tree")
            if base is not None and base not in self.trees:
                return 422, {"message": f"Invalid tree info: base_tree {base} not found"}, {}
            tree = dict(self.trees[base]) if base else {}
            for element in body["tree"]:
                if "content" in element:  # GitHub writes the blob itself
                    data = element["content"].encode("utf-8")
                    self.blobs[blob_sha(data)] = data
                    element = {**element, "sha": blob_sha(data)}
                if element.get("sha") not in self.blobs:
                    return 422, {"message": f"Invalid tree info: blob {element.get('sha')} not found"}, {}
                tree[element["path"]] = self.blobs[element["sha"]]
            sha = self._tree_sha(tree)
            return 201, {"sha": sha, "url": self._url(f"/git/trees/{sha}"), "tree": []}, {}
        if method == "POST" and rest == "/git/commits":
            if body["tree"] not in self.trees or any(p not in self.commits for p in body["parents"]):
                return 422, {"message": "Invalid tree or parent sha"}, {}
            sha = self._new_commit(dict(self.trees[body["tree"]]), message=body["message"], parents=body["parents"])
            return 201, self._commit_json(sha), {}
        if method == "PATCH" and (m := re.fullmatch(r"/git/refs/heads/(.+)", rest)):
            branch = unquote(m.group(1))
            if branch not in self.branches or body["sha"] not in self.commits:
                return 422, {"message": "Reference does not exist"}, {}
            if not body.get("force") and not self.is_ancestor(self.branches[branch], body["sha"]):
                return 422, {"message": "Update is not a fast forward"}, {}
            self.branches[branch] = body["sha"]
            return 200, self._ref_json(branch), {}
        return None

    def _file_json(self, path: str, data: bytes, *, with_content: bool) -> dict[str, Any]:
        large = len(data) > self.large_file_threshold
        out = {
            "type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "size": len(data),
            "sha": blob_sha(data), "url": f"{self.api_url}/repos/{self.repository}/contents/{path}",
            "html_url": f"https://github.example/{self.repository}/blob/x/{path}",
            "git_url": None, "download_url": None,
        }
        if with_content:
            out["encoding"] = "none" if large else "base64"
            out["content"] = "" if large else base64.encodebytes(data).decode()
        return out

    def _get_contents(self, path: str, ref: str) -> tuple[int, Any, dict[str, str]]:
        tree = self._tree(ref)
        if tree is None:
            return 404, {"message": f"No commit found for the ref {ref}"}, {}
        if path not in tree:
            return 404, {"message": "Not Found"}, {}
        return 200, self._file_json(path, tree[path], with_content=True), {}

    def _list_comments(self, issue: int, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        per_page = int(query.get("per_page", [self.per_page])[0])
        page = int(query.get("page", ["1"])[0])
        comments = self.comments.get(issue, [])
        last = max(1, -(-len(comments) // per_page))
        chunk = comments[(page - 1) * per_page: page * per_page]
        base = f"{self.api_url}/repos/{self.repository}/issues/{issue}/comments"
        links = []
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<{base}?per_page={per_page}&page=1>; rel="first"')
            links.append(f'<{base}?per_page={per_page}&page={page - 1}>; rel="prev"')
        return 200, chunk, ({"Link": ", ".join(links)} if links else {})


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            status, payload, headers = fake.handle(self.command, self.path, body,
                                                   self.headers.get("Authorization"))
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()  # bytes: sent as is
            wire = fake.wire_fault(self.command, urlsplit(self.path).path)
            if wire is not None and wire[0] == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if wire is not None and wire[0] == "cut":
                self.wfile.write(data[:len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            if wire is not None and wire[0] == "drip":
                for at in range(len(data)):
                    try:
                        self.wfile.write(data[at:at + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: the point of the test
                        self.close_connection = True
                        return
                    time.sleep(wire[1])
                return
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve_fake_github(**kwargs: Any) -> Iterator[FakeGitHub]:
    """Start a FakeGitHub on 127.0.0.1 (a free port) in a thread; stop it on exit."""
    fake = FakeGitHub(**kwargs)
    with local_server(_handler(fake)) as fake.api_url:
        yield fake
