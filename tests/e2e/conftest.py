"""Fixtures shared by the action's end-to-end tests. Each test module supplies its own ``engine``
fixture (the canned scores differ); ``github`` can be overridden where the fake needs other
settings (the adapter tests use a personal token and user)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.action_harness import TOKEN, ActionWorld
from tests.e2e.fake_engine import FakeEngine
from tests.e2e.fake_github import FakeGitHub, serve_fake_github


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve_fake_github(token=TOKEN) as fake:
        yield fake


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          github: FakeGitHub, engine: FakeEngine) -> ActionWorld:
    return ActionWorld(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, github=github, engine=engine)
