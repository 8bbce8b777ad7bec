"""The Azure DevOps adapter of the forge interface (``forge.base.ForgeApi``), over the Git REST API
(``api-version=7.1``) with the standard library's HTTP client. Calls used (and nothing else)::

    GET   {collection}/_apis/connectionData                 whose threads are ours
    GET   {repo}                                            the default branch
    GET   {repo}/items?path=P&versionDescriptor…            a file at a commit or branch (404 → None)
    GET   {repo}/refs?filter=heads/B                        a branch's head commit
    POST  {repo}/pushes                                     one commit; refUpdates' oldObjectId = the head
                                                            that was read (409 when it moved → ConflictError)
    GET   {repo}/pullRequests/{id}                          head and target commits (lastMerge…Commit)
    GET   {repo}/pullRequests/{id}/threads                  to find our thread by its marker
    POST  {repo}/pullRequests/{id}/threads                  create it
    PATCH {repo}/pullRequests/{id}/threads/{t}/comments/{c} edit its first comment

The thread and every read use the comment token (``SYSTEM_ACCESSTOKEN``); the push uses the write
token (``RETRIEVAL_GATE_AZURE_WRITE_TOKEN``). Every call goes through the forges' one JSON client
(``forge.http.JsonClient``: the total deadline, a GET's retries, named and scrubbed errors); a
write whose answer was lost or a 5xx is never re-sent blindly: the thread is looked for again, the
branch re-read.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping

from pydantic import SecretStr

from retrieval_gate.errors import ConflictError, ForgeError, PermissionDenied
from retrieval_gate.forge.azure.settings import COMMENT_TOKEN_VARIABLE, WRITE_TOKEN_VARIABLE
from retrieval_gate.forge.base import PostedComment, PullInfo, RemoteFile
from retrieval_gate.forge.http import JsonClient, upsert_by_marker
from retrieval_gate.forge.wait import CALL_DEADLINE_S

API_VERSION = "7.1"
NO_TOKEN = {
    COMMENT_TOKEN_VARIABLE: (f"this step has no {COMMENT_TOKEN_VARIABLE} (map $(System.AccessToken) into its env:; a "
                             "pull request from a fork gets none)"),
    WRITE_TOKEN_VARIABLE: (f"this job has no {WRITE_TOKEN_VARIABLE} (a secret of the variable group whose branch "
                           "control admits only the default branch, mapped into the refresh job alone)"),
}


def _basic(token: str) -> str:
    return "Basic " + base64.b64encode(f":{token}".encode()).decode()


class AzureRepo:
    """One repository of one Azure DevOps project."""

    def __init__(self, *, comment_token: SecretStr, write_token: SecretStr, api_url: str,
                 scrub: Callable[[str], str], log: Callable[[str], None], timeout: float = 30,
                 deadline_s: float | None = CALL_DEADLINE_S, sleep: Callable[[float], None] = time.sleep) -> None:
        tokens = {COMMENT_TOKEN_VARIABLE: comment_token, WRITE_TOKEN_VARIABLE: write_token}
        self._repo = api_url.rstrip("/")
        self._collection = self._repo.split("/_apis/")[0].rsplit("/", 1)[0]
        self._scrub, self._log = scrub, log
        self._http = JsonClient(service="Azure DevOps", base=self._repo, tokens=tokens, no_token=NO_TOKEN,
                                authorization=_basic, scrub=scrub, log=log, query={"api-version": API_VERSION},
                                timeout=timeout, deadline_s=deadline_s, sleep=sleep)
        self._call = self._http.call  # each call with the reader's token unless it names another
        self._me: str | bool = False  # False: not asked yet

    # -- reads ----------------------------------------------------------------------------------

    def default_branch(self) -> str:
        repo = self._call("GET", self._repo, action="read the repository")
        return str(repo.get("defaultBranch") or "refs/heads/main").removeprefix("refs/heads/")

    def get_file(self, *, path: str, ref: str) -> RemoteFile | None:
        kind = "commit" if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref) else "branch"
        item = self._call("GET", f"{self._repo}/items", action=f"read {path} at {ref[:40]}", missing_ok=True,
                          query={"path": f"/{path}", "versionDescriptor.version": ref,
                                 "versionDescriptor.versionType": kind, "includeContent": "true",
                                 "$format": "json"})
        if item is None:
            return None
        if item.get("isFolder"):
            raise ForgeError(self._scrub(f"read {path} at {ref[:40]}: is a folder, not a file"))
        content = item.get("content")
        if not isinstance(content, str):
            raise ForgeError(self._scrub(f"read {path} at {ref[:40]}: the answer holds no text content"))
        return RemoteFile(path=path, text=content, sha=str(item.get("objectId") or ""))

    def branch_head(self, *, branch: str) -> str:
        refs = self._call("GET", f"{self._repo}/refs", action=f"read branch {branch}",
                          query={"filter": f"heads/{branch}"})
        for ref in refs.get("value") or []:
            if ref.get("name") == f"refs/heads/{branch}":
                return str(ref["objectId"])
        raise ForgeError(self._scrub(f"read branch {branch}: no such branch"))

    def get_pull(self, *, number: int) -> PullInfo:
        pull = self._call("GET", f"{self._repo}/pullRequests/{number}", action=f"read pull request !{number}")
        target = (pull.get("lastMergeTargetCommit") or {}).get("commitId")
        source = (pull.get("lastMergeSourceCommit") or {}).get("commitId")
        if not target or not source:
            raise ForgeError(self._scrub(f"read pull request !{number}: no merge commits yet (a draft whose merge "
                                         "was not computed?)"))
        fork = ((pull.get("forkSource") or {}).get("repository") or {}).get("name") or ""
        return PullInfo(number=number, head_sha=str(source), base_sha=str(target),
                        base_ref=str(pull.get("targetRefName") or "").removeprefix("refs/heads/"), head_repo=str(fork))

    # -- writes ---------------------------------------------------------------------------------

    def commit_files(self, *, branch: str, parent: str, files: Mapping[str, str], message: str) -> str:
        """One push of one commit holding ``files`` on top of ``parent``; Azure DevOps refuses it
        (409) unless ``branch`` still points at ``parent`` (the ref update's ``oldObjectId``)."""
        action = f"push {', '.join(files)} to {branch}"
        self._http.writable(action, variable=WRITE_TOKEN_VARIABLE)
        changes = []
        for path, text in files.items():
            exists = self.get_file(path=path, ref=parent) is not None
            changes.append({"changeType": "edit" if exists else "add", "item": {"path": f"/{path}"},
                            "newContent": {"content": text, "contentType": "rawtext"}})
        body = {"refUpdates": [{"name": f"refs/heads/{branch}", "oldObjectId": parent}],
                "commits": [{"comment": message, "changes": changes}]}
        try:
            pushed = self._call("POST", f"{self._repo}/pushes", action=action, variable=WRITE_TOKEN_VARIABLE, body=body)
        except (ConflictError, PermissionDenied):
            raise
        except ForgeError as exc:  # a 5xx or a lost answer: did it land?
            now = self.branch_head(branch=branch)
            if now == parent:
                raise
            self._log(self._scrub(f"{exc}; re-read: {branch} moved to {now[:12]}: taking it as a concurrent write"))
            raise ConflictError(self._scrub(f"{action}: {exc}; {branch} is at {now[:12]} now")) from None
        commits = pushed.get("commits") or []
        return str(commits[-1]["commitId"]) if commits else str((pushed.get("refUpdates") or [{}])[0]["newObjectId"])

    def _my_id(self) -> str:
        """The comment token's identity (``connectionData``' ``authenticatedUser.id``, which every
        token may read): the one proof of which threads are ours. Without it no thread is adopted
        and nothing is posted: the job fails (``ForgeError``, never ``PermissionDenied``, whose "the
        job passes" is for a job that holds no token)."""
        if self._me is False:
            action = "read the comment token's identity (connectionData)"
            try:
                data = self._call("GET", f"{self._collection}/_apis/connectionData", action=action,
                                  variable=COMMENT_TOKEN_VARIABLE)
            except ForgeError as exc:
                raise ForgeError(self._scrub(f"{exc}: without the token's identity no thread can be told to be "
                                             "ours, so none is adopted or posted")) from None
            me = (data.get("authenticatedUser") or {}).get("id") if isinstance(data, dict) else None
            if not isinstance(me, str) or not me:
                raise ForgeError(self._scrub(f"{action}: the answer names no authenticated user: no thread can be "
                                             "told to be ours"))
            self._me = me
        return self._me  # type: ignore[return-value]

    def _find(self, *, number: int, marker: str) -> tuple[str, str, str] | None:
        """(thread id, comment id, its text) of the oldest thread whose first comment holds the marker
        and was written by the token's verified identity (anyone else's marker is never adopted)."""
        me = self._my_id()
        threads = self._call("GET", f"{self._repo}/pullRequests/{number}/threads",
                             action=f"list the threads of !{number}")
        for thread in sorted(threads.get("value") or [], key=lambda t: int(t.get("id") or 0)):
            first = next(iter(thread.get("comments") or []), None)
            if not first or marker not in str(first.get("content") or ""):
                continue
            if str((first.get("author") or {}).get("id")) != me:
                continue
            return str(thread["id"]), str(first["id"]), str(first.get("content") or "")
        return None

    def upsert_comment(self, *, number: int, marker: str, body: str) -> PostedComment:
        action = f"thread on pull request !{number}"
        self._http.writable(action, variable=COMMENT_TOKEN_VARIABLE)
        threads = f"{self._repo}/pullRequests/{number}/threads"
        page = f"{self._repo.split('/_apis/')[0]}/_git/{self._repo.rsplit('/', 1)[-1]}/pullrequest/{number}"

        def post() -> PostedComment:
            made = self._call("POST", threads, action=action, variable=COMMENT_TOKEN_VARIABLE, body={
                "comments": [{"parentCommentId": 0, "content": body, "commentType": 1}], "status": 1})
            return PostedComment(id=str(made["id"]), url=f"{page}?discussionId={made['id']}", created=True)

        def edit(found: tuple[str, str, str]) -> PostedComment:
            thread_id, comment_id, text = found
            if text != body:
                self._call("PATCH", f"{threads}/{thread_id}/comments/{comment_id}",
                           action=f"edit the thread of !{number}", variable=COMMENT_TOKEN_VARIABLE,
                           body={"content": body})
            return PostedComment(id=thread_id, url=f"{page}?discussionId={thread_id}", created=False)

        return upsert_by_marker(find=lambda: self._find(number=number, marker=marker), post=post, edit=edit)

