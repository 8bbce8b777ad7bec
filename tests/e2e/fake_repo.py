"""What the fakes of the forges' REST APIs share: the record of each request they answered
(``Logged``), and a repository's history held as whole trees per commit (``TreeHistory``: the
Azure DevOps and Gitea fakes; GitLab's keeps each file's last commit beside it, GitHub's its trees)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass
class Logged:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    token: str | None
    status: int = 0


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
