"""GitHub's kit (``tests/e2e/kits/__init__.py``): the runner of ``action_harness``, the fake GitHub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.action_harness import TOKEN, ActionWorld
from tests.e2e.fake_github import HUMAN, FakeGitHub, serve_fake_github

SECRETS = (TOKEN,)


def serve() -> Any:
    return serve_fake_github(token=TOKEN)


class Kit:
    write_variable = None  # one token, whose reach the workflow's permissions set (docs/action.md)
    identity_by_author = True  # the Actions token (ghs_…): its comments are the Bot github-actions[bot]'s

    def __init__(self, *, fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], engine: Any) -> None:
        self.fake = fake
        self.job = ActionWorld(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, github=fake, engine=engine)
        self.root: Path = self.job.workspace

    def refresh(self) -> tuple[int, str]:
        run = self.job.run(event_name="push", event=self.job.push_event(ref="refs/heads/main"),
                           ref="refs/heads/main", sha="a" * 40, inputs={"audit": "false"})
        return run.exit_code, run.stdout + run.stderr

    def commits(self) -> int:
        return len(self.fake.requests("PATCH", r"/git/refs/heads/main$"))

    def head(self) -> str:
        return self.fake.branches["main"]

    def pull_request(self, base: str) -> tuple[int, str]:
        if 7 not in getattr(self.fake, "pulls", {}):
            self.fake.add_pull(7, head_sha="f" * 40, base_sha=base)
        run = self.job.run(event_name="pull_request", event=self.job.pr_event(7, base_sha=base),
                           ref="refs/pull/7/merge", sha="f" * 40, inputs={"audit": "false"})
        return run.exit_code, run.stdout + run.stderr

    def posted(self) -> list[str]:
        return [c["body"] for c in self.fake.comments.get(7, [])]

    def writes_of_the_comment(self) -> tuple[int, int]:
        return len(self.fake.requests("POST", r"/comments$")), len(self.fake.requests("PATCH", r"/comments/\d+$"))

    def plant_foreign(self, body: str) -> None:
        self.fake.add_comment(7, body, user=HUMAN)

    def refuse_identity(self) -> None:
        self.fake.user = None  # GET /user → 403
