"""What the action's flows receive: the GitHub port they call, the context they run in, and the
outcome they return. The GitHub adapter (``publish.github.GitHubRepo``) implements the port; tests
pass a real adapter against a fake API, or fakes of these interfaces."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from retrieval_gate.clock import now_iso
from retrieval_gate.errors import UsageError
from retrieval_gate.files import write_text_atomic
from retrieval_gate.publish.action_settings import ActionSettings
from retrieval_gate.publish.engine import Engine
from retrieval_gate.publish.runner import Runner
from retrieval_gate.publish.untrusted import scrub_text

if TYPE_CHECKING:
    from retrieval_gate.publish.github import PostedComment, PullInfo, RemoteFile

MAX_WRITE_ATTEMPTS = 5


class GitHubPort(Protocol):
    """What the flows need from GitHub (implemented by ``publish.github.GitHubRepo``)."""

    def default_branch(self) -> str: ...

    def get_file(self, *, path: str, ref: str) -> RemoteFile | None: ...

    def branch_head(self, *, branch: str) -> str: ...

    def commit_files(self, *, branch: str, parent: str, files: Mapping[str, str], message: str) -> str: ...

    def upsert_comment(self, *, issue_number: int, marker: str, body: str) -> PostedComment: ...

    def get_pull(self, *, number: int) -> PullInfo: ...


@dataclass
class Outcome:
    """What a flow did: the mode, the exit code and the step outputs."""

    mode: str
    exit_code: int
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class FlowContext:
    """Everything a flow touches, passed in: settings, engine, GitHub factory, runner, clock, sleep."""

    settings: ActionSettings
    engine: Engine
    github: Callable[[], GitHubPort]
    runner: Runner
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], str] = now_iso
    jitter: Callable[[], float] = random.random
    max_attempts: int = MAX_WRITE_ATTEMPTS
    _gh: GitHubPort | None = None

    def scrub(self, text: str) -> str:
        """``text`` without the token, the ACTIONS_* values or the config's secret header values."""
        return scrub_text(text, secrets=self.settings.secret_values)

    def write_text(self, path: Path, text: str) -> None:
        """Every file a flow writes goes through here: scrubbed, then written atomically."""
        write_text_atomic(path, text=self.scrub(text))

    def gh(self) -> GitHubPort:
        if self._gh is None:
            if not self.settings.repository:
                raise UsageError("GITHUB_REPOSITORY is not set: the pr, update-baseline and comment modes "
                                 "need the GitHub API (run inside GitHub Actions, or use mode: report)")
            self._gh = self.github()
        return self._gh
