"""The GitLab adapter of the forge interface (``forge.base.ForgeApi``), over GitLab's REST API v4
through python-gitlab.

- Files are read at a commit (the merge request's base, from its ``diff_refs``: never the merge
  request's own copy).
- ``commit_files`` writes every file in one commit through the Commits API, with the write token
  (``RETRIEVAL_GATE_GITLAB_WRITE_TOKEN``), and only if the branch still points at the head that
  was read: a moved branch, or a file another writer changed since (each update carries the
  file's ``last_commit_id``, which GitLab checks), is a ``ConflictError`` and the caller re-reads,
  re-merges and retries.
- ``upsert_comment`` keeps one note per suite on the merge request (found by its marker among the
  notes the note token's user wrote), with the note token (``RETRIEVAL_GATE_GITLAB_TOKEN``):
  updated, never duplicated.
- Without a token (a fork's merge request gets none of the parent's variables; a protected one is
  withheld from an unprotected source branch) it reads anonymously, which a public project allows,
  and every write is ``PermissionDenied`` naming the variable that is missing.

Every call has the same total deadline as on every forge (``forge.wait.call_deadline``), and no
token ever appears in a message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import gitlab
import requests
from gitlab import exceptions as gl_errors
from pydantic import SecretStr

from retrieval_gate.errors import ConflictError, ForgeError, PermissionDenied
from retrieval_gate.forge.base import PostedComment, PullInfo, RemoteFile
from retrieval_gate.forge.gitlab.settings import NOTE_TOKEN_VARIABLE, WRITE_TOKEN_VARIABLE
from retrieval_gate.forge.wait import CALL_DEADLINE_S, DeadlinePassed, call_deadline

NO_NOTE_TOKEN = (f"this job has no {NOTE_TOKEN_VARIABLE} (a masked variable holding a project access token with "
                 "the Reporter role and the api scope): a fork's merge request gets none, and a protected one is "
                 "withheld from a merge request whose source branch is not protected")
NO_WRITE_TOKEN = (f"this job has no {WRITE_TOKEN_VARIABLE} (a protected, masked variable scoped to the refresh "
                  "job's environment, holding a project access token with the Developer role and the api scope)")
_CONFLICT_WORDS = ("changed since", "already exists", "doesn't exist", "does not exist", "conflict")


def server_url(api_url: str) -> str:
    """``https://gitlab.example.com/api/v4`` (CI_API_V4_URL) → ``https://gitlab.example.com``."""
    parts = urlsplit(api_url.rstrip("/"))
    path = parts.path.removesuffix("/api/v4")
    return f"{parts.scheme}://{parts.netloc}{path}"


class GitLabProject:
    """One project, through one python-gitlab client."""

    def __init__(self, *, note_token: SecretStr, write_token: SecretStr, project: str, api_url: str,
                 scrub: Callable[[str], str], timeout: float = 30,
                 deadline_s: float | None = CALL_DEADLINE_S) -> None:
        self._tokens = {NOTE_TOKEN_VARIABLE: note_token, WRITE_TOKEN_VARIABLE: write_token}
        self._scrub = scrub
        self._api_url = api_url.rstrip("/")
        self._deadline_s = deadline_s
        self._timeout = timeout
        self._clients: dict[str, Any] = {}
        self._project_id = project
        self._projects: dict[str, Any] = {}
        self._user_id: int | bool = False  # False: not asked yet
        # reads: with the note token, else the write token (the refresh job), else anonymously
        self._reader = next((name for name, token in self._tokens.items() if token.get_secret_value()), "")

    def _client(self, variable: str) -> Any:
        if variable not in self._clients:
            secret = (self._tokens[variable].get_secret_value() or None) if variable else None
            client = gitlab.Gitlab(url=server_url(self._api_url), private_token=secret, timeout=self._timeout,
                                   retry_transient_errors=True, keep_base_url=True)
            client.session.trust_env = False  # no proxy or netrc from the environment: only the token we hold
            self._clients[variable] = client
        return self._clients[variable]

    # -- errors ---------------------------------------------------------------------------------

    def _message(self, text: str) -> str:
        return self._scrub(text)

    @contextmanager
    def _translate(self, action: str, *, conflict: bool = False, variable: str = "") -> Iterator[None]:
        try:
            with call_deadline(self._deadline_s):
                yield
        except DeadlinePassed:
            raise ForgeError(self._message(f"{action}: no complete answer from the GitLab API within "
                                            f"{self._deadline_s:g} s (total deadline per call): giving up")) from None
        except gl_errors.GitlabAuthenticationError as exc:
            whose = f"the token in {variable or self._reader or 'no variable'}"
            text = self._message(f"{action}: HTTP {exc.response_code}: {whose} was refused (expired, revoked, "
                                 "or for another GitLab instance)")
            raise PermissionDenied(text) from None
        except gl_errors.GitlabError as exc:
            code = exc.response_code
            detail = str(exc.error_message)[:200] if exc.error_message else ""
            text = self._message(f"{action}: HTTP {code}{': ' + detail if detail else ''}")
            if code == 403:
                raise PermissionDenied(f"{text} (the token in {variable or self._reader or 'no variable'} may not)"
                                       ) from None
            if conflict and (code in (409, 422) or (code == 400 and any(w in detail.lower()
                                                                            for w in _CONFLICT_WORDS))):
                raise ConflictError(text) from None
            error = ForgeError(text)
            error.status = code  # type: ignore[attr-defined]
            raise error from None
        except requests.RequestException as exc:
            raise ForgeError(self._message(f"{action}: cannot reach the GitLab API at {self._api_url}: "
                                            f"{type(exc).__name__}")) from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not the JSON expected
            raise ForgeError(self._message(f"{action}: the GitLab API answered with a body that is not the JSON "
                                            f"expected ({type(exc).__name__})")) from None

    def _writable(self, action: str, *, variable: str) -> None:
        if not self._tokens[variable].get_secret_value():
            raise PermissionDenied(f"{action}: {NO_NOTE_TOKEN if variable == NOTE_TOKEN_VARIABLE else NO_WRITE_TOKEN}")

    # -- reads ----------------------------------------------------------------------------------

    def project(self, variable: str | None = None) -> Any:
        """The project through the client of ``variable``'s token (reads: the reader's)."""
        name = self._reader if variable is None else variable
        if name not in self._projects:
            with self._translate(f"read project {self._project_id}", variable=name):
                self._projects[name] = self._client(name).projects.get(self._project_id, lazy=variable is not None)
        return self._projects[name]

    def default_branch(self) -> str:
        return str(self.project().default_branch)

    def get_file(self, *, path: str, ref: str) -> RemoteFile | None:
        with self._translate(f"read {path} at {ref[:40]}"):
            try:
                found = self.project().files.get(file_path=path, ref=ref)
            except gl_errors.GitlabGetError as exc:
                if exc.response_code == 404:
                    return None
                raise
            return RemoteFile(path=path, text=found.decode().decode("utf-8"), sha=str(found.blob_id))

    def branch_head(self, *, branch: str) -> str:
        with self._translate(f"read branch {branch}"):
            return str(self.project().branches.get(branch).commit["id"])

    def get_pull(self, *, number: int) -> PullInfo:
        with self._translate(f"read merge request !{number}"):
            mr = self.project().mergerequests.get(number)
            refs = mr.diff_refs or {}
            return PullInfo(number=number, head_sha=str(mr.sha), base_sha=str(refs.get("base_sha") or ""),
                            base_ref=str(mr.target_branch), head_repo=str(mr.source_project_id))

    # -- writes ---------------------------------------------------------------------------------

    def commit_files(self, *, branch: str, parent: str, files: Mapping[str, str], message: str) -> str:
        action = f"commit {', '.join(files)} to {branch}"
        self._writable(action, variable=WRITE_TOKEN_VARIABLE)
        head = self.branch_head(branch=branch)
        if head != parent:
            raise ConflictError(f"{action}: {branch} moved from {parent[:12]} to {head[:12]} since it was read")
        actions = []
        for path, text in files.items():
            with self._translate(f"read {path} at {parent[:12]}"):
                try:
                    existing = self.project().files.get(file_path=path, ref=parent)
                except gl_errors.GitlabGetError as exc:
                    if exc.response_code != 404:
                        raise
                    existing = None
            item = {"file_path": path, "content": text, "encoding": "text"}
            if existing is None:
                actions.append({"action": "create", **item})
            else:
                actions.append({"action": "update", "last_commit_id": str(existing.last_commit_id), **item})
        with self._translate(action, conflict=True, variable=WRITE_TOKEN_VARIABLE):
            commit = self.project(WRITE_TOKEN_VARIABLE).commits.create(
                {"branch": branch, "commit_message": message, "actions": actions})
        return str(commit.id)

    def _own_user(self) -> int:
        """The note token's user (``GET /user``): the one proof of which notes are ours. Without it no
        note is adopted and nothing is posted: the job fails (``ForgeError``, never
        ``PermissionDenied``, whose "the job passes" is for a job that holds no token)."""
        if self._user_id is False:
            try:
                with self._translate("read the note token's user (GET /user)", variable=NOTE_TOKEN_VARIABLE):
                    client = self._client(NOTE_TOKEN_VARIABLE)
                    client.auth()
                    user = client.user
                    user_id = int(user.id) if user is not None else None
            except ForgeError as exc:
                raise ForgeError(self._message(f"{exc}: without the token's user no note can be told to be ours, "
                                               "so none is adopted or posted")) from None
            if user_id is None:
                raise ForgeError(self._message("read the note token's user (GET /user): GitLab named no user: no "
                                               "note can be told to be ours"))
            self._user_id = user_id
        return self._user_id  # type: ignore[return-value]

    def upsert_comment(self, *, number: int, marker: str, body: str) -> PostedComment:
        action = f"note on merge request !{number}"
        self._writable(action, variable=NOTE_TOKEN_VARIABLE)
        me = self._own_user()
        with self._translate(f"list the notes of !{number}", variable=NOTE_TOKEN_VARIABLE):
            mr = self.project(NOTE_TOKEN_VARIABLE).mergerequests.get(number, lazy=True)
            ours = next((note for note in mr.notes.list(iterator=True, sort="asc", order_by="created_at")
                         if marker in (note.body or "") and (note.author or {}).get("id") == me), None)
        url = f"{self.project().web_url}/-/merge_requests/{number}"
        with self._translate(action, variable=NOTE_TOKEN_VARIABLE):
            if ours is not None:
                ours.body = body
                ours.save()
                return PostedComment(id=int(ours.id), url=f"{url}#note_{ours.id}", created=False)
            note = mr.notes.create({"body": body})
            return PostedComment(id=int(note.id), url=f"{url}#note_{note.id}", created=True)
