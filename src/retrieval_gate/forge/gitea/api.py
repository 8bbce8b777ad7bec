"""The Gitea / Forgejo adapter of the forge interface (``forge.base.ForgeApi``), over the REST API
v1 through the forges' one JSON client (``forge.http.JsonClient``: the total deadline of every
call, a GET's retries, named and scrubbed errors). Calls used (and nothing else)::

    GET   {api}/user                                         whose comments are ours (scope read:user)
    GET   {api}/repos/{owner}/{repo}                         the default branch
    GET   {api}/repos/{owner}/{repo}/contents/{path}?ref=R   a file at a commit or branch (404 → None)
    GET   {api}/repos/{owner}/{repo}/branches/{branch}       a branch's head commit
    POST  {api}/repos/{owner}/{repo}/contents                one commit of several files on a branch
    GET   {api}/repos/{owner}/{repo}/pulls/{n}               head and base commits
    GET   {api}/repos/{owner}/{repo}/issues/{n}/comments     to find our comment by its marker
    POST  {api}/repos/{owner}/{repo}/issues/{n}/comments     create it
    PATCH {api}/repos/{owner}/{repo}/issues/comments/{id}    edit it

The concurrency check of the refresh: Gitea's multi-file commit names no parent commit, so the
branch's head is read first and the commit refused (``ConflictError``) unless it is still
``parent``; each file updated names the blob it replaces (``sha``, read at ``parent``) and each
file created must not exist, so a write that raced the check is refused by Gitea itself (422, or
409) and, the branch re-read, reported as the conflict it is.

Whose comment: only one whose author is the comment token's user, read with ``GET /user`` (the
token needs the scope ``read:user``). A comment that holds the marker but was written by anyone
else (a pull request's author can write the marker too) is never edited nor taken for ours; when
``GET /user`` is refused, nothing is adopted or posted and the job fails (a ``ForgeError``, not the
``PermissionDenied`` of a job without a token, whose run passes). Comments and reads use the comment
token (``RETRIEVAL_GATE_GITEA_TOKEN``), the commit the write token. A write whose answer was lost
or a 5xx is never re-sent blindly: the comment is looked for again, the branch re-read.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from pydantic import SecretStr

from retrieval_gate.errors import ConflictError, ForgeError, PermissionDenied
from retrieval_gate.forge.base import PostedComment, PullInfo, RemoteFile
from retrieval_gate.forge.gitea.settings import COMMENT_TOKEN_VARIABLE, WRITE_TOKEN_VARIABLE
from retrieval_gate.forge.http import JsonClient, upsert_by_marker
from retrieval_gate.forge.wait import CALL_DEADLINE_S

NO_TOKEN = {
    COMMENT_TOKEN_VARIABLE: (f"this step has no {COMMENT_TOKEN_VARIABLE} (a secret of a bot's access token with "
                             "write:issue, read:repository and read:user, mapped into its env:; a pull request "
                             "from a fork gets none)"),
    WRITE_TOKEN_VARIABLE: (f"this job has no {WRITE_TOKEN_VARIABLE} (a secret of a token that may push to the "
                           "default branch, mapped into the refresh job alone)"),
}
_STALE = 422  # Gitea's answer to a stale blob sha or a file created that exists (a conflict is 409)


def _token(token: str) -> str:
    return f"token {token}"


class GiteaRepo:
    """One repository of a Gitea or Forgejo server."""

    def __init__(self, *, comment_token: SecretStr, write_token: SecretStr, repository: str, api_url: str,
                 server_url: str, scrub: Callable[[str], str], log: Callable[[str], None], timeout: float = 30,
                 deadline_s: float | None = CALL_DEADLINE_S, sleep: Callable[[float], None] = time.sleep) -> None:
        tokens = {COMMENT_TOKEN_VARIABLE: comment_token, WRITE_TOKEN_VARIABLE: write_token}
        self._api = api_url.rstrip("/")
        self._repo = f"{self._api}/repos/{quote(repository, safe='/')}"
        self._page = f"{server_url.rstrip('/')}/{repository}"
        self._scrub, self._log = scrub, log
        self._http = JsonClient(service="Gitea", base=self._api, tokens=tokens, no_token=NO_TOKEN,
                                authorization=_token, scrub=scrub, log=log, timeout=timeout, deadline_s=deadline_s,
                                sleep=sleep)
        self._call = self._http.call  # each call with the reader's token unless it names another
        self._me: str | bool = False  # False: not asked yet

    # -- reads ----------------------------------------------------------------------------------

    def default_branch(self) -> str:
        return str(self._call("GET", self._repo, action="read the repository").get("default_branch") or "main")

    def get_file(self, *, path: str, ref: str) -> RemoteFile | None:
        action = f"read {path} at {ref[:40]}"
        item = self._call("GET", f"{self._repo}/contents/{quote(path)}", action=action, query={"ref": ref},
                          missing_ok=True)
        if item is None:
            return None
        if not isinstance(item, dict) or item.get("type") != "file":
            raise ForgeError(self._scrub(f"{action}: is not a file"))
        content = item.get("content")
        if not isinstance(content, str) or item.get("encoding") != "base64":
            raise ForgeError(self._scrub(f"{action}: the answer holds no base64 content"))
        try:
            text = base64.b64decode(content, validate=False).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ForgeError(self._scrub(f"{action}: the content is not base64 of UTF-8 text")) from None
        return RemoteFile(path=path, text=text, sha=str(item.get("sha") or ""))

    def branch_head(self, *, branch: str) -> str:
        found = self._call("GET", f"{self._repo}/branches/{quote(branch, safe='')}", action=f"read branch {branch}",
                           missing_ok=True)
        head = ((found or {}).get("commit") or {}).get("id")
        if not head:
            raise ForgeError(self._scrub(f"read branch {branch}: no such branch"))
        return str(head)

    def get_pull(self, *, number: int) -> PullInfo:
        pull = self._call("GET", f"{self._repo}/pulls/{number}", action=f"read pull request #{number}")
        head, base = pull.get("head") or {}, pull.get("base") or {}
        if not head.get("sha") or not base.get("sha"):
            raise ForgeError(self._scrub(f"read pull request #{number}: no head or base commit in the answer"))
        return PullInfo(number=number, head_sha=str(head["sha"]), base_sha=str(base["sha"]),
                        base_ref=str(base.get("ref") or ""),
                        head_repo=str((head.get("repo") or {}).get("full_name") or ""))

    # -- writes ---------------------------------------------------------------------------------

    def commit_files(self, *, branch: str, parent: str, files: Mapping[str, str], message: str) -> str:
        """One commit holding ``files`` on ``branch``, refused (``ConflictError``) unless the branch is
        still at ``parent`` (the module's docstring: how)."""
        action = f"commit {', '.join(files)} to {branch}"
        self._http.writable(action, variable=WRITE_TOKEN_VARIABLE)
        if (now := self.branch_head(branch=branch)) != parent:
            raise ConflictError(self._scrub(f"{action}: {branch} moved from {parent[:12]} to {now[:12]}"))
        changes = []
        for path, text in files.items():
            current = self.get_file(path=path, ref=parent)
            change = {"operation": "update" if current else "create", "path": path,
                      "content": base64.b64encode(text.encode("utf-8")).decode("ascii")}
            if current:
                change["sha"] = current.sha
            changes.append(change)
        try:
            made = self._call("POST", f"{self._repo}/contents", action=action, variable=WRITE_TOKEN_VARIABLE,
                              body={"branch": branch, "message": message, "files": changes})
        except (ConflictError, PermissionDenied):
            raise
        except ForgeError as exc:  # refused as stale (422), a 5xx or a lost answer: did the branch move?
            now = self.branch_head(branch=branch)
            if now == parent:
                raise
            if getattr(exc, "status", None) != _STALE:
                self._log(self._scrub(f"{exc}; re-read: {branch} moved to {now[:12]}: taking it as a concurrent "
                                      "write"))
            raise ConflictError(self._scrub(f"{action}: {exc}; {branch} is at {now[:12]} now")) from None
        sha = (made.get("commit") or {}).get("sha") if isinstance(made, dict) else None
        if not sha:
            raise ForgeError(self._scrub(f"{action}: the answer names no commit"))
        return str(sha)

    def _my_login(self) -> str:
        """The comment token's user (``GET /user``, which Gitea answers only for a token with the
        scope ``read:user``): the one proof of which comments are ours. Without it no comment is
        adopted and nothing is posted: the job fails (``ForgeError``, never ``PermissionDenied``,
        whose "the job passes" is for a job that holds no token)."""
        if self._me is False:
            action = "read the comment token's user (GET /user)"
            try:
                user = self._call("GET", f"{self._api}/user", action=action, variable=COMMENT_TOKEN_VARIABLE)
            except ForgeError as exc:
                raise ForgeError(self._scrub(
                    f"{exc}: without the token's user no comment can be told to be ours, so none is adopted "
                    f"or posted; give {COMMENT_TOKEN_VARIABLE} the scope read:user (docs/ci.md, "
                    "\"Gitea and Forgejo\")")) from None
            login = user.get("login") if isinstance(user, dict) else None
            if not isinstance(login, str) or not login:
                raise ForgeError(self._scrub(f"{action}: the answer names no login: no comment can be told to "
                                             "be ours"))
            self._me = login
        return self._me  # type: ignore[return-value]

    def _find(self, *, number: int, marker: str) -> tuple[int, str, str] | None:
        """(id, text, page) of the oldest comment on ``number`` holding the marker whose author is
        the token's verified user (a marker anyone else wrote is never adopted)."""
        me = self._my_login()
        comments = self._call("GET", f"{self._repo}/issues/{number}/comments",
                              action=f"list the comments of #{number}")
        for comment in sorted(comments if isinstance(comments, list) else [], key=lambda c: int(c.get("id") or 0)):
            text = str(comment.get("body") or "")
            if marker not in text or str((comment.get("user") or {}).get("login")) != me:
                continue
            return int(comment["id"]), text, str(comment.get("html_url") or "")
        return None

    def upsert_comment(self, *, number: int, marker: str, body: str) -> PostedComment:
        action = f"comment on pull request #{number}"
        self._http.writable(action, variable=COMMENT_TOKEN_VARIABLE)

        def post() -> PostedComment:
            made = self._call("POST", f"{self._repo}/issues/{number}/comments", action=action,
                              variable=COMMENT_TOKEN_VARIABLE, body={"body": body})
            return PostedComment(id=int(made["id"]), url=self._url(number, made), created=True)

        def edit(found: tuple[int, str, str]) -> PostedComment:
            comment_id, text, page = found
            if text != body:
                self._call("PATCH", f"{self._repo}/issues/comments/{comment_id}",
                           action=f"edit the comment on #{number}", variable=COMMENT_TOKEN_VARIABLE,
                           body={"body": body})
            return PostedComment(id=comment_id, url=page or f"{self._page}/pulls/{number}#issuecomment-{comment_id}",
                                 created=False)

        return upsert_by_marker(find=lambda: self._find(number=number, marker=marker), post=post, edit=edit)

    def _url(self, number: int, made: Mapping[str, Any]) -> str:
        return str(made.get("html_url") or f"{self._page}/pulls/{number}#issuecomment-{made['id']}")
