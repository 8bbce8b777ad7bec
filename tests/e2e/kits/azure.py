"""Azure DevOps' kit (``tests/e2e/kits/__init__.py``): the job of ``test_action_azure``, the fake
Azure DevOps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e import test_action_azure as az
from tests.e2e.fake_azure import HUMAN, FakeAzure, serve_fake_azure

SECRETS = (az.TOKEN, az.WRITE_TOKEN)


def serve() -> Any:
    return serve_fake_azure(token=az.TOKEN, write_token=az.WRITE_TOKEN)


class Kit:
    write_variable = "RETRIEVAL_GATE_AZURE_WRITE_TOKEN"
    identity_by_author = False

    def __init__(self, *, fake: FakeAzure, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], engine: Any) -> None:
        self.fake = fake
        self.job = az.AzureJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, azure=fake, engine=engine)
        self.root: Path = self.job.workspace

    def refresh(self) -> tuple[int, str]:
        code, out, err = self.job.refresh(config="refresh.yml")
        return code, out + err

    def commits(self) -> int:
        return len([r for r in self.fake.requests("POST", r"/pushes$") if r.status == 201])

    def head(self) -> str:
        return self.fake.branches["main"]

    def pull_request(self, base: str) -> tuple[int, str]:
        code, out, err = self.job.pull_request(7, target=base)
        return code, out + err

    def posted(self) -> list[str]:
        return [t["comments"][0]["content"] for t in self.fake.threads.get(7, [])]

    def writes_of_the_comment(self) -> tuple[int, int]:
        return len(self.fake.requests("POST", r"/threads$")), len(self.fake.requests("PATCH", r"/comments/\d+$"))

    def plant_foreign(self, body: str) -> None:
        self.fake.add_thread(7, body, author=HUMAN)

    def refuse_identity(self) -> None:
        self.fake.refuse_identity = True
