"""What the fakes of the forges' REST APIs share: the record of each request they answered
(``Logged``, kept and searched by ``RequestLog``, which also runs a test's hooks before a matching
request), and a repository's history held as whole trees per commit (``TreeHistory``: the
Azure DevOps and Gitea fakes; GitLab's keeps each file's last commit beside it, GitHub's its trees)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Logged:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    token: str | None
    status: int = 0


class RequestLog:
    """Every request a dataclass fake answered (its ``log``), and the hooks a test set to run before
    the next matching one (its ``hooks``: method, path pattern, hook)."""

    log: list[Logged]
    hooks: list[tuple[str, re.Pattern[str], Callable[[], None]]]

    def before(self, method: str, path_regex: str, hook: Callable[[], None]) -> None:
        self.hooks.append((method, re.compile(path_regex), hook))

    def requests(self, method: str, path_regex: str = "") -> list[Logged]:
        return [r for r in self.log if r.method == method and re.search(path_regex, r.path)]

    def record(self, method: str, raw: str, body: Any, token: str | None) -> tuple[Logged, str, dict[str, list[str]]]:
        """Log the request (its path unquoted) and run the first hook it matches, once; the entry
        (its status set by the caller), the unquoted path and the query."""
        parts = urlsplit(raw)
        path, query = unquote(parts.path), parse_qs(parts.query)
        entry = Logged(method, path, query, body, token)
        self.log.append(entry)
        for hook_method, pattern, hook in list(self.hooks):
            if hook_method == method and pattern.search(path):
                self.hooks.remove((hook_method, pattern, hook))
                hook()
        return entry, path, query


class TreeHistory:
    """Commits as whole trees, for a dataclass fake that holds ``commits`` (sha → path → bytes),
    ``messages`` (sha → message), ``branches`` (name → sha) and ``_lock``."""

    commits: dict[str, dict[str, bytes]]
    messages: dict[str, str]
    branches: dict[str, str]
    _lock: Any

    def _new_commit(self, *, parent: str | None, changes: dict[str, bytes], message: str) -> str:
        files = dict(self.commits.get(parent, {})) if parent else {}
        files.update(changes)
        sha = hashlib.sha1(f"{parent}{sorted(files.items())}{message}{len(self.commits)}".encode()).hexdigest()
        self.commits[sha] = files
        self.messages[sha] = message
        return sha

    def commit(self, branch: str, files: dict[str, str], *, message: str = "a commit") -> str:
        """Another writer's commit of ``files`` on ``branch``; the new head."""
        with self._lock:
            sha = self._new_commit(parent=self.branches[branch], changes={p: t.encode() for p, t in files.items()},
                                   message=message)
            self.branches[branch] = sha
            return sha

    def file(self, ref: str, path: str) -> str | None:
        data = self.commits.get(self.branches.get(ref, ref), {}).get(path)
        return data.decode() if data is not None else None
