"""A fake GitLab REST API v4 served over real HTTP on 127.0.0.1, for end-to-end tests of the action
in a GitLab pipeline.

It implements the endpoints python-gitlab calls for us (forge/gitlab/api.py), with GitLab's
semantics where they matter: a project addressed by its URL-encoded path or its numeric id;
repository files read at a branch or a commit sha (base64, with ``blob_id`` and ``last_commit_id``);
a commit of several file actions on a branch's *current* head (as GitLab does), refused with 400
when an ``update`` names a ``last_commit_id`` that is not the file's last commit any more, or a
``create`` names a file that exists; merge-request notes paginated with ``Link`` headers; ``GET
/user`` for a token, or refused (``refuse_identity``); a merge request with its ``diff_refs``. Reads
need no token (a public project); writes need ``PRIVATE-TOKEN`` (401 otherwise), and two tokens are
told apart by role, as GitLab does: the note token (Reporter) may write notes and gets 403 on a
commit; the write token (Developer) may commit.

``before(method, path_regex, hook)`` runs a hook before a matching request is handled (e.g. another
writer pushes). Every request is logged.
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
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.e2e.fake_repo import Logged, RequestLog
from tests.helpers import local_server

BOT = {"id": 77, "username": "project_12_bot", "name": "retrieval-gate"}
WRITER = {"id": 78, "username": "project_12_bot_writer", "name": "retrieval-gate refresh"}
HUMAN = {"id": 1, "username": "alice", "name": "Alice"}


@dataclass
class FakeGitLab(RequestLog):
    token: str  # the note token (Reporter)
    write_token: str = ""  # the refresh's token (Developer)
    project_path: str = "acme/rag"
    project_id: int = 12
    default_branch: str = "main"
    per_page: int = 20
    url: str = ""
    # commit sha → {path: (content, last_commit_id)}
    commits: dict[str, dict[str, tuple[bytes, str]]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    merge_requests: dict[int, dict[str, Any]] = field(default_factory=dict)
    log: list[Logged] = field(default_factory=list)
    hooks: list[tuple[str, re.Pattern[str], Callable[[], None]]] = field(default_factory=list)
    refuse_identity: bool = False  # True: GET /user is refused (403), the token's user cannot be read
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1000))
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        root = self._new_commit(parent=None, changes={".gitkeep": b""}, message="init")
        self.branches[self.default_branch] = root

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v4"

    # -- state ------------------------------------------------------------------------------------

    def _new_commit(self, *, parent: str | None, changes: dict[str, bytes], message: str) -> str:
        files = dict(self.commits[parent]) if parent else {}
        sha = hashlib.sha1(f"{parent}{sorted(changes.items())}{message}{len(self.commits)}".encode()).hexdigest()
        for path, data in changes.items():
            files[path] = (data, sha)
        self.commits[sha] = files
        self.messages[sha] = message
        return sha

    def commit(self, branch: str, files: dict[str, str], *, message: str = "a commit") -> str:
        """Another writer pushes ``files`` onto ``branch``; returns the new head."""
        with self._lock:
            head = self._new_commit(parent=self.branches[branch], message=message,
                                    changes={p: t.encode("utf-8") for p, t in files.items()})
            self.branches[branch] = head
            return head

    def file(self, ref: str, path: str) -> str | None:
        sha = self.branches.get(ref, ref)
        entry = self.commits.get(sha, {}).get(path)
        return entry[0].decode("utf-8") if entry else None

    def add_merge_request(self, iid: int, *, base_sha: str, head_sha: str = "f" * 40,
                          source_project_id: int | None = None) -> None:
        self.merge_requests[iid] = {
            "id": 5000 + iid, "iid": iid, "project_id": self.project_id, "target_branch": self.default_branch,
            "source_branch": "feature", "sha": head_sha, "source_project_id": source_project_id or self.project_id,
            "target_project_id": self.project_id, "state": "opened",
            "diff_refs": {"base_sha": base_sha, "head_sha": head_sha, "start_sha": base_sha}}

    def add_note(self, iid: int, body: str, *, author: dict[str, Any]) -> dict[str, Any]:
        note = {"id": next(self._ids), "body": body, "author": dict(author), "system": False}
        self.notes.setdefault(iid, []).append(note)
        return note

    # -- HTTP -------------------------------------------------------------------------------------

    def handle(self, method: str, raw_path: str, body: Any, token: str | None) -> tuple[int, Any, dict[str, str]]:
        entry, _, query = self.record(method, raw_path, body, token)
        path = urlsplit(raw_path).path  # routed quoted: a project's id is "group%2Fname"
        if token is not None and token not in (self.token, self.write_token):
            return 401, {"message": "401 Unauthorized"}, {}
        status, data, headers = self._route(method, path, query, body, token)
        entry.status = status
        return status, data, headers

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any,
               token: str | None) -> tuple[int, Any, dict[str, str]]:
        if path == "/api/v4/user":
            if self.refuse_identity and token:
                return 403, {"message": "403 Forbidden"}, {}
            user = BOT if token == self.token else WRITER
            return (200, user, {}) if token else (401, {"message": "401 Unauthorized"}, {})
        m = re.fullmatch(r"/api/v4/projects/([^/]+)(/.*)?", path)
        if not m or unquote(m.group(1)) not in (self.project_path, str(self.project_id)):
            return 404, {"message": "404 Project Not Found"}, {}
        rest = m.group(2) or ""
        if method != "GET" and not token:
            return 401, {"message": "401 Unauthorized"}, {}
        with self._lock:
            if rest == "" and method == "GET":
                return 200, {"id": self.project_id, "path_with_namespace": self.project_path,
                             "default_branch": self.default_branch,
                             "web_url": f"{self.url}/{self.project_path}"}, {}
            if f := re.fullmatch(r"/repository/files/([^/]+)", rest):
                return self._get_file(unquote(f.group(1)), (query.get("ref") or [""])[0])
            if b := re.fullmatch(r"/repository/branches/([^/]+)", rest):
                head = self.branches.get(unquote(b.group(1)))
                if head is None:
                    return 404, {"message": "404 Branch Not Found"}, {}
                return 200, {"name": unquote(b.group(1)), "commit": {"id": head}}, {}
            if rest == "/repository/commits" and method == "POST":
                if token != self.write_token:  # a Reporter may not push
                    return 403, {"message": "403 Forbidden - You are not allowed to push into this branch"}, {}
                return self._post_commit(body)
            if (mr := re.fullmatch(r"/merge_requests/(\d+)", rest)) and method == "GET":
                found = self.merge_requests.get(int(mr.group(1)))
                return (200, found, {}) if found is not None else (404, {"message": "404 Not found"}, {})
            if n := re.fullmatch(r"/merge_requests/(\d+)/notes", rest):
                return self._notes(method, int(n.group(1)), query, body, path, token)
            if n := re.fullmatch(r"/merge_requests/(\d+)/notes/(\d+)", rest):
                return self._edit_note(method, int(n.group(1)), int(n.group(2)), body)
        return 404, {"message": f"404 no route {method} {rest}"}, {}

    def _get_file(self, path: str, ref: str) -> tuple[int, Any, dict[str, str]]:
        sha = self.branches.get(ref, ref)
        entry = self.commits.get(sha, {}).get(path)
        if entry is None:
            return 404, {"message": "404 File Not Found"}, {}
        data, last = entry
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        return 200, {"file_name": path.rsplit("/", 1)[-1], "file_path": path, "size": len(data), "encoding": "base64",
                     "content": base64.b64encode(data).decode(), "ref": ref, "blob_id": blob, "commit_id": sha,
                     "last_commit_id": last}, {}

    def _post_commit(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        branch = body.get("branch")
        head = self.branches.get(branch)
        if head is None:
            return 400, {"message": "You can only create or edit files when you are on a branch"}, {}
        changes = {}
        for action in body.get("actions", []):
            path = action["file_path"]
            current = self.commits[head].get(path)
            if action["action"] == "create" and current is not None:
                return 400, {"message": "A file with this name already exists"}, {}
            if action["action"] == "update":
                if current is None:
                    return 400, {"message": "A file with this name doesn't exist"}, {}
                if action.get("last_commit_id") and action["last_commit_id"] != current[1]:
                    return 400, {"message": "You are attempting to update a file that has changed since you "
                                            "started editing it."}, {}
            changes[path] = action["content"].encode("utf-8")
        sha = self._new_commit(parent=head, changes=changes, message=body.get("commit_message", ""))
        self.branches[branch] = sha
        return 201, {"id": sha, "short_id": sha[:8], "message": body.get("commit_message", "")}, {}

    def _notes(self, method: str, iid: int, query: dict[str, list[str]], body: Any,
               path: str, token: str | None) -> tuple[int, Any, dict[str, str]]:
        notes = self.notes.setdefault(iid, [])
        if method == "POST":
            return 201, self.add_note(iid, body["body"], author=BOT if token == self.token else WRITER), {}
        page = int((query.get("page") or ["1"])[0])
        per_page = min(int((query.get("per_page") or [str(self.per_page)])[0]), self.per_page)
        chunk = notes[(page - 1) * per_page: page * per_page]
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(notes))}
        if page * per_page < len(notes):
            rest = {k: v[0] for k, v in query.items() if k != "page"}
            qs = "&".join(f"{k}={quote(v)}" for k, v in sorted({**rest, "page": str(page + 1)}.items()))
            headers["Link"] = f'<{self.url}{path}?{qs}>; rel="next"'
            headers["X-Next-Page"] = str(page + 1)
        return 200, chunk, headers

    def _edit_note(self, method: str, iid: int, note_id: int, body: Any) -> tuple[int, Any, dict[str, str]]:
        note = next((n for n in self.notes.get(iid, []) if n["id"] == note_id), None)
        if note is None:
            return 404, {"message": "404 Note Not Found"}, {}
        if method == "PUT":
            if note["author"]["id"] != BOT["id"]:
                return 403, {"message": "403 Forbidden"}, {}
            note["body"] = body["body"]
        return 200, note, {}


@contextmanager
def serve_fake_gitlab(*, token: str, write_token: str = "", **kwargs: Any) -> Iterator[FakeGitLab]:
    fake = FakeGitLab(token=token, write_token=write_token, **kwargs)

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body: Any = None
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            status, data, headers = fake.handle(self.command, self.path, body, self.headers.get("PRIVATE-TOKEN"))
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = _serve

        def log_message(self, *args: Any) -> None:
            pass

    with local_server(Handler) as fake.url:
        yield fake
