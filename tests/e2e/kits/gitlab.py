"""GitLab's kit (``tests/e2e/kits/__init__.py``): the job of ``test_action_gitlab``, the fake GitLab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e import test_action_gitlab as gl
from tests.e2e.fake_gitlab import HUMAN, FakeGitLab, serve_fake_gitlab

SECRETS = (gl.TOKEN, gl.WRITE_TOKEN)


def serve() -> Any:
    return serve_fake_gitlab(token=gl.TOKEN, write_token=gl.WRITE_TOKEN)


class Kit:
    write_variable = "RETRIEVAL_GATE_GITLAB_WRITE_TOKEN"
    identity_by_author = False

    def __init__(self, *, fake: FakeGitLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], engine: Any) -> None:
        self.fake = fake
        self.job = gl.GitLabJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, gitlab=fake, engine=engine)
        self.root: Path = self.job.workspace

    def refresh(self) -> tuple[int, str]:
        code, out, err = self.job.refresh(config="refresh.yml")
        return code, out + err

    def commits(self) -> int:
        return len([r for r in self.fake.requests("POST", r"/repository/commits$") if r.status == 201])

    def head(self) -> str:
        return self.fake.branches["main"]

    def pull_request(self, base: str) -> tuple[int, str]:
        code, out, err = self.job.merge_request(7, base_sha=base)
        return code, out + err

    def posted(self) -> list[str]:
        return [n["body"] for n in self.fake.notes.get(7, [])]

    def writes_of_the_comment(self) -> tuple[int, int]:
        return len(self.fake.requests("POST", r"/notes$")), len(self.fake.requests("PUT", r"/notes/\d+$"))

    def plant_foreign(self, body: str) -> None:
        self.fake.add_note(7, body, author=HUMAN)

    def refuse_identity(self) -> None:
        self.fake.refuse_identity = True
