"""Temp files of killed writers are removed by the next write in that folder; a live writer's
temp file and other people's files are left alone."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from retrieval_gate.files import STALE_AFTER_S, write_text_atomic


def aged(path: Path, text: str = "half a file") -> Path:
    path.write_text(text, encoding="utf-8")
    old = time.time() - STALE_AFTER_S - 60
    os.utime(path, (old, old))
    return path


def test_a_killed_writers_temp_file_goes_on_the_next_write(tmp_path: Path) -> None:
    left = aged(tmp_path / ".results.json.k1ll3d.tmp")
    other = aged(tmp_path / ".notes.md.abcd.tmp")  # another file's temp: not this write's business
    mine = aged(tmp_path / "keep.tmp")
    write_text_atomic(tmp_path / "results.json", text="{}\n")
    assert (tmp_path / "results.json").read_text() == "{}\n"
    assert not left.exists() and other.exists() and mine.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".notes.md.abcd.tmp", "keep.tmp", "results.json"]


def test_a_live_writers_temp_file_is_left_alone(tmp_path: Path) -> None:
    live = aged(tmp_path / ".results.json.l1v3.tmp")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a writer in another process holds its own
        write_text_atomic(tmp_path / "results.json", text="{}\n")
        assert live.exists()
    finally:
        os.close(fd)
    write_text_atomic(tmp_path / "results.json", text="{}\n")  # its writer gone: now it is stale
    assert not live.exists()


def test_a_fresh_temp_file_is_left_alone(tmp_path: Path) -> None:
    fresh = tmp_path / ".results.json.n3w.tmp"
    fresh.write_text("being written", encoding="utf-8")
    write_text_atomic(tmp_path / "results.json", text="{}\n")
    assert fresh.exists()
