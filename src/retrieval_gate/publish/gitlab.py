"""The GitLab adapter: the same port the flows call on GitHub (``flow_context.GitHubPort``), over
GitLab's REST API v4 through python-gitlab.

- Files are read at a ref (the merge request's base sha: never the merge request's own copy).
- ``commit_files`` writes every file in one commit through the Commits API, and only if the
  branch still points at the head that was read: a moved branch, or a file another writer changed
  since (each update carries the file's ``last_commit_id``, which GitLab checks), is a
  ``ConflictError`` and the caller re-reads, re-merges and retries.
- ``upsert_comment`` keeps one note per suite on the merge request (found by its marker among the
  notes this token's user wrote): updated, never duplicated.
- Without a token (a fork's merge-request pipeline gets none of the parent's masked variables) it
  reads anonymously, which a public project allows, and every write is ``PermissionDenied``: the
  flow then says so in the job log and posts nothing.

Every call has the same total deadline as on GitHub (``github_wait.call_deadline``), and the
token never appears in a message.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import gitlab
import requests
from gitlab import exceptions as gl_errors
from pydantic import SecretStr

from retrieval_gate.errors import ConflictError, GitHubError, PermissionDenied
from retrieval_gate.publish.github import PostedComment, PullInfo, RemoteFile
from retrieval_gate.publish.github_wait import CALL_DEADLINE_S, DeadlinePassed, call_deadline
from retrieval_gate.publish.untrusted import scrub_text

NO_TOKEN = ("no GitLab token: the job has no RETRIEVAL_GATE_GITLAB_TOKEN (a masked CI/CD variable holding a "
            "project access token with the api scope; a fork's merge-request pipeline gets none)")
_CONFLICT_WORDS = ("changed since", "already exists", "doesn't exist", "does not exist", "conflict")


def server_url(api_url: str) -> str:
    """``https://gitlab.example.com/api/v4`` (CI_API_V4_URL) → ``https://gitlab.example.com``."""
    parts = urlsplit(api_url.rstrip("/"))
    path = parts.path.removesuffix("/api/v4")
    return f"{parts.scheme}://{parts.netloc}{path}"


class GitLabProject:
    """One project, through one python-gitlab client."""

    def __init__(self, *, token: SecretStr, project: str, api_url: str, timeout: float = 30,
                 deadline_s: float | None = CALL_DEADLINE_S) -> None:
        self._token = token
        self._api_url = api_url.rstrip("/")
        self._deadline_s = deadline_s
        secret = token.get_secret_value() or None
        self._gl = gitlab.Gitlab(url=server_url(self._api_url), private_token=secret, timeout=timeout,
                                 retry_transient_errors=True, keep_base_url=True)
        self._gl.session.trust_env = False  # no proxy or netrc from the environment: only the token we hold
        self._project_id = project
        self._project: Any = None
        self._user_id: int | bool | None = False  # False: not asked yet

    # -- errors ---------------------------------------------------------------------------------

    def _message(self, text: str) -> str:
        return scrub_text(text, secrets=[self._token.get_secret_value()])

    @contextmanager
    def _translate(self, action: str, *, conflict: bool = False) -> Iterator[None]:
        try:
            with call_deadline(self._deadline_s):
                yield
        except DeadlinePassed:
            raise GitHubError(self._message(f"{action}: no complete answer from the GitLab API within "
                                            f"{self._deadline_s:g} s (total deadline per call): giving up")) from None
        except gl_errors.GitlabAuthenticationError as exc:
            text = self._message(f"{action}: HTTP {exc.response_code}: the token was refused")
            raise PermissionDenied(text) from None
        except gl_errors.GitlabError as exc:
            code = exc.response_code
            detail = str(exc.error_message)[:200] if exc.error_message else ""
            text = self._message(f"{action}: HTTP {code}{': ' + detail if detail else ''}")
            if code == 403:
                raise PermissionDenied(text) from None
            if conflict and (code in (409, 422) or (code == 400 and any(w in detail.lower()
                                                                            for w in _CONFLICT_WORDS))):
                raise ConflictError(text) from None
            error = GitHubError(text)
            error.status = code  # type: ignore[attr-defined]
            raise error from None
        except requests.RequestException as exc:
            raise GitHubError(self._message(f"{action}: cannot reach the GitLab API at {self._api_url}: "
                                            f"{type(exc).__name__}")) from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not the JSON expected
            raise GitHubError(self._message(f"{action}: the GitLab API answered with a body that is not the JSON "
                                            f"expected ({type(exc).__name__})")) from None

    def _writable(self, action: str) -> None:
        if not self._token.get_secret_value():
            raise PermissionDenied(f"{action}: {NO_TOKEN}")

    # -- reads ----------------------------------------------------------------------------------

    def project(self) -> Any:
        if self._project is None:
            with self._translate(f"read project {self._project_id}"):
                self._project = self._gl.projects.get(self._project_id)
        return self._project

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
        self._writable(action)
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
        with self._translate(action, conflict=True):
            commit = self.project().commits.create({"branch": branch, "commit_message": message, "actions": actions})
        return str(commit.id)

    def _own_user(self) -> int | None:
        if self._user_id is False:
            with self._translate("read the token's user"):
                self._gl.auth()
                user = self._gl.user
            self._user_id = int(user.id) if user is not None else None
        return self._user_id  # type: ignore[return-value]

    def upsert_comment(self, *, issue_number: int, marker: str, body: str) -> PostedComment:
        action = f"comment on merge request !{issue_number}"
        self._writable(action)
        me = self._own_user()
        with self._translate(f"list the notes of !{issue_number}"):
            mr = self.project().mergerequests.get(issue_number, lazy=True)
            ours = next((note for note in mr.notes.list(iterator=True, sort="asc", order_by="created_at")
                         if marker in (note.body or "") and (me is None or note.author.get("id") == me)), None)
        url = f"{self.project().web_url}/-/merge_requests/{issue_number}"
        with self._translate(action):
            if ours is not None:
                ours.body = body
                ours.save()
                return PostedComment(id=int(ours.id), url=f"{url}#note_{ours.id}", created=False)
            note = mr.notes.create({"body": body})
            return PostedComment(id=int(note.id), url=f"{url}#note_{note.id}", created=True)
