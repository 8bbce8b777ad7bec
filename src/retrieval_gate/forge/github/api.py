"""GitHub adapter over PyGithub: the few REST calls the action needs, with retries, named errors
and the token scrubbed from every message.

Calls used (and nothing else)::

    GET   /user                                   whose comments are ours (403 for GITHUB_TOKEN)
    GET   /repos/{o}/{r}                          default branch (only when the event lacks it)
    GET   /repos/{o}/{r}/contents/{path}?ref=R    a file at a branch or commit  (404 → None)
    GET   /repos/{o}/{r}/git/blobs/{sha}          the same file when it is over the 1 MB contents limit
    GET   /repos/{o}/{r}/git/ref/heads/{branch}   the branch's head commit
    GET   /repos/{o}/{r}/git/commits/{sha}        its tree
    POST  /repos/{o}/{r}/git/trees                the head's tree with the files replaced (their text inline)
    POST  /repos/{o}/{r}/git/commits              one commit, parent = the head that was read
    PATCH /repos/{o}/{r}/git/refs/heads/{branch}  move the branch, never forced (422 → ConflictError)
    GET   /repos/{o}/{r}/issues/{n}/comments      every page (Link headers), to find the sticky comment
    POST  /repos/{o}/{r}/issues/{n}/comments      create it
    PATCH /repos/{o}/{r}/issues/comments/{id}     edit it
    GET   /repos/{o}/{r}/pulls/{n}                head and base sha (dispatch with pr_number; ``comment`` mode)

Retries: 5xx, 429 and rate-limit 403 answers are retried by PyGithub's ``GithubRetry`` (a urllib3
``Retry``) with exponential backoff — waits 0, 2, 4, 8, 16 s (``backoff_factor`` × 2^(n−1), the
first retry immediate), honouring ``Retry-After`` and ``X-RateLimit-Reset`` up to
``max_rate_limit_wait`` (5 minutes): a longer wait asked for (``Retry-After: 3600`` on a 429 or
a 5xx, which urllib3 alone would honour for up to 6 hours) gives up at once with one
``ForgeError`` line. An answer whose body is not the JSON expected (an HTML error page, a cut-off
body) is a ``ForgeError`` too, never a traceback. A POST that got a 5xx is *not* retried by the
transport (the comment may have been created); :meth:`GitHubRepo.upsert_comment` looks for it
again instead.

Deadlines (``forge/wait.py``): a total deadline of 120 s per call (connect + headers +
body; the retry policy's waits not counted). A GET whose answer was lost (reset, cut body) is
asked again (3 attempts); after a write whose answer was lost (comment POST, ref PATCH) the
adapter re-reads, and reports the write as landed when it did.
"""

from __future__ import annotations

import base64
import http.client
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, InputGitTreeElement
from github.Requester import Requester
from pydantic import SecretStr
from urllib3.exceptions import HTTPError as Urllib3Error

from retrieval_gate.errors import ConflictError, ForgeError, PermissionDenied
from retrieval_gate.forge.base import PostedComment, PullInfo, RemoteFile
from retrieval_gate.forge.github.retry import WaitTooLong, default_retry
from retrieval_gate.forge.wait import (
    CALL_DEADLINE_S,
    GET_ATTEMPTS,
    LOST_ANSWER_WAIT_S,
    DeadlinePassed,
    LostAnswer,
    answer_was_lost,
    call_deadline,
)
from retrieval_gate.render.escape import escape_terminal

T = TypeVar("T")

ACTIONS_BOT_LOGIN = "github-actions[bot]"


# PyGithub's pause before each mutating request (GitHub's advice against its secondary rate
# limits: "at least one second between each request" that creates or changes content). A tuning
# constant: the end-to-end tests, against a local fake, set it to None.
SECONDS_BETWEEN_WRITES: float | None = 1.0


class GitHubRepo:
    """One repository, through one authenticated PyGithub client."""

    def __init__(
        self,
        *,
        token: SecretStr,
        repository: str,
        scrub: Callable[[str], str],
        api_url: str = "https://api.github.com",
        retries: int = 5,
        backoff_factor: float = 1.0,
        timeout: int = 30,
        seconds_between_writes: float | None = SECONDS_BETWEEN_WRITES,
        deadline_s: float | None = CALL_DEADLINE_S,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if not token.get_secret_value():
            raise ForgeError("no GitHub token: set the action's github_token input")
        self._token = token
        self.seconds_between_writes = seconds_between_writes
        self._scrub = scrub
        self._api_url = api_url.rstrip("/")
        self._gh = Github(
            auth=Auth.Token(token.get_secret_value()),
            base_url=self._api_url,
            retry=default_retry(total=retries, backoff_factor=backoff_factor),
            timeout=timeout,
            lazy=True,
            seconds_between_requests=None,
            seconds_between_writes=seconds_between_writes,
        )
        self._repo = self._gh.get_repo(repository)
        self._repository = repository
        self._login: str | bool | None = False  # False: not asked yet
        self._deadline_s = deadline_s
        self._log = log or (lambda line: print(escape_terminal(line), file=sys.stderr, flush=True))

    # -- errors ---------------------------------------------------------------------------------

    def _message(self, text: str) -> str:
        return self._scrub(text)

    @contextmanager
    def _translate(self, action: str, *, conflict: bool = False) -> Iterator[None]:
        """PyGithub / transport exceptions → named errors, scrubbed; the block has the call's deadline."""
        try:
            with call_deadline(self._deadline_s):
                yield
        except DeadlinePassed:
            raise ForgeError(self._message(f"{action}: no complete answer from the GitHub API within "
                                            f"{self._deadline_s:g} s (total deadline per call): giving up")) from None
        except LostAnswer:
            raise
        except GithubException as exc:
            raise self._error(exc, action, conflict=conflict) from None
        except WaitTooLong as exc:
            raise ForgeError(self._message(f"{action}: {exc}")) from None
        except requests.exceptions.RetryError as exc:  # retries exhausted on 5xx / 429 answers
            reason = getattr(getattr(exc.args[0] if exc.args else None, "reason", None), "args", ("",))[0] or exc
            msg = self._message(f"{action}: the GitHub API kept failing after retries ({reason})")
            raise ForgeError(msg) from None
        except (requests.exceptions.ChunkedEncodingError, http.client.IncompleteRead) as exc:
            raise LostAnswer(self._message(f"{action}: the answer was cut off ({type(exc).__name__})")) from None
        except requests.exceptions.ConnectionError as exc:
            if answer_was_lost(exc):
                raise LostAnswer(self._message(f"{action}: the connection was reset before the answer came")) from None
            msg = self._message(f"{action}: cannot reach the GitHub API at {self._api_url}: {exc}")
            raise ForgeError(msg) from None
        except (requests.RequestException, Urllib3Error) as exc:
            msg = self._message(f"{action}: cannot reach the GitHub API at {self._api_url}: {exc}")
            raise ForgeError(msg) from None
        except (ValueError, KeyError, TypeError, AttributeError, AssertionError) as exc:  # not the JSON expected
            detail = str(exc).splitlines()[0][:120] if str(exc).strip() else ""
            msg = self._message(f"{action}: the GitHub API answered with a body that is not the JSON expected "
                                f"({type(exc).__name__}{': ' + detail if detail else ''})")
            raise ForgeError(msg) from None

    def _error(self, exc: GithubException, action: str, *, conflict: bool = False) -> ForgeError:
        status = exc.status
        detail = _detail(exc.data)
        text = self._message(f"{action}: HTTP {status}{': ' + detail if detail else ''}")
        if status == 403 and not Requester.isRateLimitError(detail):
            return PermissionDenied(text)
        if conflict and status in (409, 422):
            return ConflictError(text)
        error = ForgeError(text)
        error.status = status  # type: ignore[attr-defined]
        return error

    # -- repository -----------------------------------------------------------------------------

    def _get(self, action: str, call: Callable[[], T]) -> T:
        """A read (GET) under ``_translate``, asked again when its answer was lost."""
        for attempt in range(1, GET_ATTEMPTS + 1):
            try:
                with self._translate(action):
                    return call()
            except LostAnswer as exc:
                if attempt == GET_ATTEMPTS:
                    raise ForgeError(f"{exc}; giving up after {GET_ATTEMPTS} attempts") from None
                wait = LOST_ANSWER_WAIT_S * 2 ** (attempt - 1)
                self._log(f"{exc}; asking again in {wait:g} s (attempt {attempt + 1} of {GET_ATTEMPTS})")
                time.sleep(wait)
        raise AssertionError("unreachable")

    def default_branch(self) -> str:
        return self._get(f"read repository {self._repository}", lambda: str(self._repo.default_branch))

    def get_file(self, *, path: str, ref: str) -> RemoteFile | None:
        """The file's text and blob sha at ``ref`` (branch, tag or commit sha); None if absent."""
        action = f"read {path} at {ref}"
        try:
            content = self._get(action, lambda: self._repo.get_contents(path, ref=ref))
        except ForgeError as exc:
            if getattr(exc, "status", None) == 404:
                return None
            raise
        if isinstance(content, list):
            raise ForgeError(self._message(f"{action}: is a folder, not a file"))
        if content.encoding == "base64" and content.content is not None:
            with self._translate(action):
                raw = base64.b64decode(content.content)
        else:  # over 1 MB: the contents API answers without the content; the blob API has it
            blob = self._get(action, lambda: self._repo.get_git_blob(content.sha))
            with self._translate(action):
                raw = base64.b64decode(blob.content) if blob.encoding == "base64" else blob.content.encode()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ForgeError(self._message(f"{action}: not UTF-8 text")) from None
        return RemoteFile(path=path, text=text, sha=str(content.sha))

    def branch_head(self, *, branch: str) -> str:
        """The sha of the commit ``branch`` points at."""
        return self._get(f"read branch {branch}", lambda: str(self._repo.get_git_ref(f"heads/{branch}").object.sha))

    def commit_files(self, *, branch: str, parent: str, files: Mapping[str, str], message: str) -> str:
        """One commit holding ``files`` (path → text, each replaced whole) on top of ``parent``,
        and ``branch`` moved to it — only if it still points at ``parent``: the ref update is never
        forced, so GitHub refuses it (422, "not a fast forward") when another writer moved the
        branch in between; a branch that moved before the objects are made is refused here. Both
        raise :class:`ConflictError` — re-read and retry. Returns the new commit's sha."""
        action = f"write {', '.join(files)} to {branch}"
        ref = self._get(action, lambda: self._repo.get_git_ref(f"heads/{branch}"))
        head = str(ref.object.sha)
        if head != parent:
            raise ConflictError(self._message(f"{action}: {branch} moved from {parent[:12]} to {head[:12]}"))
        with self._translate(action):
            base = self._repo.get_git_commit(parent)
            # the text inline: GitHub writes the blobs (one write request fewer per file than POST /git/blobs)
            elements = [InputGitTreeElement(path, "100644", "blob", content=text) for path, text in files.items()]
            tree = self._repo.create_git_tree(elements, base_tree=base.tree)
            commit = self._repo.create_git_commit(message, tree, [base])
        try:
            with self._translate(action, conflict=True):
                ref.edit(commit.sha, force=False)
        except ConflictError:
            raise
        except ForgeError as exc:
            if not isinstance(exc, LostAnswer) and getattr(exc, "status", 0) < 500:
                raise
            now = self.branch_head(branch=branch)
            if now != str(commit.sha):
                raise (ConflictError if now != parent else ForgeError)(self._message(
                    f"{action}: {exc}; re-read: {branch} is at {now[:12]}, the write did not land")) from None
            self._log(f"{exc}; re-read: {branch} is at the new commit {str(commit.sha)[:12]}: the write landed")
        return str(commit.sha)

    def get_pull(self, *, number: int) -> PullInfo:
        def read() -> PullInfo:  # the pull's attributes are read lazily: inside the retried call
            pull = self._repo.get_pull(number)
            head_repo = pull.head.repo.full_name if pull.head.repo is not None else ""
            return PullInfo(number=number, head_sha=str(pull.head.sha), base_sha=str(pull.base.sha),
                            base_ref=str(pull.base.ref), head_repo=str(head_repo))

        return self._get(f"read pull request #{number}", read)

    # -- comments -------------------------------------------------------------------------------

    def authenticated_login(self) -> str | None:
        """The token's user (GET /user), or None where the token may not ask: installation tokens
        (``ghs_…``: the Actions GITHUB_TOKEN and GitHub App tokens) always get 403 there, so they
        are not asked at all."""
        if self._login is False and self._token.get_secret_value().startswith("ghs_"):
            self._login = None
        if self._login is False:
            try:
                self._login = self._get("read the token's user", lambda: str(self._gh.get_user().login))
            except ForgeError:
                self._login = None
        return self._login  # type: ignore[return-value]

    def _is_ours(self, user: Any) -> bool:
        """A comment is ours when its author is the token's user; where GET /user is refused (the
        Actions GITHUB_TOKEN), when it is the ``github-actions[bot]`` Bot account."""
        if user is None:
            return False
        login = self.authenticated_login()
        if login is not None:
            return str(user.login) == login
        return str(user.type) == "Bot" and str(user.login) == ACTIONS_BOT_LOGIN

    def find_comment(self, *, number: int, marker: str) -> Any | None:
        """The oldest comment of ours containing ``marker`` (a PyGithub ``IssueComment``), looking
        at every page of the issue's comments."""
        comments = self._get(f"list comments of #{number}",
                             lambda: list(self._repo.get_issue(number).get_comments()))
        return next((c for c in comments if marker in (c.body or "") and self._is_ours(c.user)), None)

    def upsert_comment(self, *, number: int, marker: str, body: str) -> PostedComment:
        """Edit our sticky comment (found by ``marker``) or create it. A 403 raises
        :class:`PermissionDenied` (fork PRs: read-only token)."""
        if marker not in body:
            raise ValueError("the comment body must contain its marker")
        found = self.find_comment(number=number, marker=marker)
        if found is not None:
            return self._edit(number=number, comment=found, body=body)
        try:
            with self._translate(f"comment on #{number}"):
                comment = self._repo.get_issue(number).create_comment(body)
        except PermissionDenied:
            raise
        except ForgeError as exc:
            if not isinstance(exc, LostAnswer) and getattr(exc, "status", 0) < 500:
                raise
            # The POST may have landed although its answer was a 5xx or lost: look again before re-posting.
            found = self.find_comment(number=number, marker=marker)
            if found is not None:
                return self._edit(number=number, comment=found, body=body)
            with self._translate(f"comment on #{number}"):
                comment = self._repo.get_issue(number).create_comment(body)
        return PostedComment(id=int(comment.id), url=str(comment.html_url), created=True)

    def _edit(self, *, number: int, comment: Any, body: str) -> PostedComment:
        with self._translate(f"edit comment {comment.id} on #{number}"):
            if comment.body != body:
                comment.edit(body)
        return PostedComment(id=int(comment.id), url=str(comment.html_url), created=False)


def _detail(data: Any) -> str:
    """GitHub's error message (and the first error detail), from an error body."""
    if isinstance(data, dict):
        message = str(data.get("message") or "")
        errors = data.get("errors")
        if isinstance(errors, list) and errors:
            first = errors[0]
            extra = first.get("message") or first.get("code") if isinstance(first, dict) else first
            if extra:
                message = f"{message} ({extra})" if message else str(extra)
        return message
    return str(data or "")[:300]
