"""Gitea's kit (``tests/e2e/kits/__init__.py``): the job of ``test_action_gitea``, the fake Gitea."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e import test_action_gitea as gt
from tests.e2e.fake_gitea import HUMAN, FakeGitea, serve_fake_gitea

SECRETS = (gt.TOKEN, gt.WRITE_TOKEN, gt.JOB_TOKEN, gt.RUNTIME_TOKEN)


def serve() -> Any:
    return serve_fake_gitea(token=gt.TOKEN, write_token=gt.WRITE_TOKEN)


class Kit:
    write_variable = "RETRIEVAL_GATE_GITEA_WRITE_TOKEN"
    identity_by_author = False

    def __init__(self, *, fake: FakeGitea, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], engine: Any) -> None:
        self.fake = fake
        self.job = gt.GiteaJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, gitea=fake, engine=engine)
        self.root: Path = self.job.workspace

    def refresh(self) -> tuple[int, str]:
        code, out, err = self.job.refresh(config="refresh.yml")
        return code, out + err

    def commits(self) -> int:
        return len([r for r in self.fake.requests("POST", r"/contents$") if r.status == 201])

    def head(self) -> str:
        return self.fake.branches["main"]

    def pull_request(self, base: str) -> tuple[int, str]:
        code, out, err = self.job.pull_request(7, base=base)
        return code, out + err

    def posted(self) -> list[str]:
        return [c["body"] for c in self.fake.comments.get(7, [])]

    def writes_of_the_comment(self) -> tuple[int, int]:
        return len(self.fake.requests("POST", r"/comments$")), len(self.fake.requests("PATCH", r"/comments/\d+$"))

    def plant_foreign(self, body: str) -> None:
        self.fake.add_comment(7, body, user=HUMAN)

    def refuse_identity(self) -> None:
        self.fake.refuse_identity = True
