"""The action on push never commits a baseline from a corrupted store: with a store damaged
between two merges (flipped bits in its vectors and in the cache) the second run rebuilds and
commits the clean numbers; with a store that cannot be rebuilt it exits 2, one line, and the
branch is not moved. Real engine, real model, real Chroma, the fake GitHub API over HTTP."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.e2e.action_harness import TOKEN
from tests.e2e.fake_github import serve_fake_github
from tests.e2e.test_action_real_engine import _run, workspace  # noqa: F401 - the fixture, reused

pytestmark = pytest.mark.model

PUSH = {"ref": "refs/heads/main", "repository": {"default_branch": "main"}}


def flip_everything(store: Path) -> None:
    """One sign bit and one exponent bit in every stored vector, and in every cached vector."""
    conn = sqlite3.connect(store / "chroma" / "chroma.sqlite3")
    for rowid, blob in conn.execute("SELECT rowid, vector FROM embeddings_queue WHERE vector IS NOT NULL").fetchall():
        data = bytearray(blob)
        data[3] ^= 0x80
        data[7] ^= 0x40
        conn.execute("UPDATE embeddings_queue SET vector=? WHERE rowid=?", (bytes(data), rowid))
    conn.commit()
    conn.close()
    conn = sqlite3.connect(store / "embeddings.sqlite3")
    for space, key, blob in conn.execute("SELECT space, key, vec FROM vectors").fetchall():
        data = bytearray(blob)
        data[3] ^= 0x80
        conn.execute("UPDATE vectors SET vec=? WHERE space=? AND key=?", (bytes(data), space, key))
    conn.commit()
    conn.close()


def numbers(baseline_text: str) -> dict:
    data = json.loads(baseline_text)
    return {"cases": data["cases"], "slices": data.get("slices", data.get("aggregates"))}


def the_store(tmp_path: Path) -> Path:
    found = [p.parent for p in tmp_path.rglob("retrieval-gate-store.json")]
    assert found, "the action kept no store"
    return found[0]


def test_a_corrupted_store_between_merges_never_reaches_the_baseline(workspace: Path, tmp_path: Path) -> None:  # noqa: F811
    with serve_fake_github(token=TOKEN) as github:
        first = _run(github, workspace, tmp_path, 1, event_name="push", ref="refs/heads/main", sha="a" * 40,
                     event=PUSH)
        assert first.exit_code == 0, first.stderr
        clean = github.file_at("main", "baselines/default.json")
        assert clean is not None
        store = the_store(tmp_path)
        flip_everything(store)
        second = _run(github, workspace, tmp_path, 2, event_name="push", ref="refs/heads/main", sha="b" * 40,
                      event=PUSH)
        assert second.exit_code == 0, second.stderr
        assert "failed the check" in second.stderr
        after = github.file_at("main", "baselines/default.json")
        assert after is not None and numbers(after) == numbers(clean)
        assert [h["sha"] for h in json.loads(after)["history"]] == ["a" * 40, "b" * 40]

        # a store that cannot be rebuilt (its chroma/ folder replaced by a file): exit 2, nothing committed
        head = github.branches["main"]
        shutil.rmtree(store / "chroma")
        (store / "chroma").write_text("not a folder", encoding="utf-8")
        third = _run(github, workspace, tmp_path, 3, event_name="push", ref="refs/heads/main", sha="c" * 40,
                     event=PUSH)
        assert third.exit_code == 2, third.stderr
        errors = [line for line in third.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in third.stderr, third.stderr
        assert github.branches["main"] == head
