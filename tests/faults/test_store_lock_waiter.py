"""The store lock's waiter, against a holder in another process: a waiter that gives up leaves the
holder's record as it was (the next waiter still learns who holds the store), and while it waits
it says who holds it and how long it will still wait, at a steady interval. No model: the lock
alone."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_gate.errors import StoreError
from retrieval_gate.store import folder
from retrieval_gate.store.folder import LOCK_FILE, StoreLock
from tests.faults.conftest import SAFETY_NET_S

HOLDER = ("import fcntl, os, sys, time\n"
          "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
          "fcntl.flock(fd, fcntl.LOCK_EX)\n"
          "os.write(fd, b'{\"command\": \"retrieval-gate eval (the holder)\", \"pid\": %d}\\n' % os.getpid())\n"
          "print('held', flush=True)\n"
          "sys.stdin.read()\n")  # holds until the test closes its stdin


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / LOCK_FILE)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    assert proc.stdin is not None and proc.stdout is not None
    if not proc.stdin.closed:
        proc.stdin.close()
    proc.wait(timeout=SAFETY_NET_S)
    proc.stdout.close()


def test_a_waiter_that_gives_up_leaves_the_holders_record_intact(tmp_path: Path, holder) -> None:
    record = (tmp_path / LOCK_FILE).read_text(encoding="utf-8")
    assert json.loads(record)["pid"] == holder.pid
    for _ in range(2):  # the second waiter still sees who holds it
        notes: list[str] = []
        with pytest.raises(StoreError) as info:
            StoreLock(tmp_path, timeout_s=0.3, notify=notes.append)
        assert f"in use by pid {holder.pid} (retrieval-gate eval (the holder))" in str(info.value)
        assert notes[0] == f"store {tmp_path} is in use by pid {holder.pid} (retrieval-gate eval (the holder)); " \
                           "waiting up to 0.3 s"
        assert (tmp_path / LOCK_FILE).read_text(encoding="utf-8") == record


def test_a_waiter_says_who_holds_the_lock_and_the_time_left_at_a_steady_interval(
        tmp_path: Path, holder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder, "LOCK_NOTE_EVERY_S", 0.4)  # our own interval, shortened to reach the path
    notes: list[str] = []
    with pytest.raises(StoreError):
        StoreLock(tmp_path, timeout_s=1.5, notify=notes.append)
    assert notes[0].endswith("waiting up to 1.5 s")
    later = notes[1:]
    assert 1 <= len(later) <= 3  # at 0.4, 0.8, 1.2 s (a slow machine may skip none: the interval is a floor)
    for note in later:
        assert note.startswith(f"store {tmp_path}: still waiting for pid {holder.pid} (retrieval-gate eval (the "
                               "holder)), ") and note.endswith(" s left of 1.5 s")


def test_the_lock_is_taken_once_the_holder_lets_go_and_its_own_record_written(tmp_path: Path, holder) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=SAFETY_NET_S)
    lock = StoreLock(tmp_path, timeout_s=SAFETY_NET_S, notify=lambda _: None)
    try:
        import os

        assert json.loads((tmp_path / LOCK_FILE).read_text(encoding="utf-8"))["pid"] == os.getpid()
    finally:
        lock.release()
    assert (tmp_path / LOCK_FILE).read_text(encoding="utf-8") == ""  # the holder clears its own record


def test_each_second_of_the_wait_is_a_progress_step_for_the_live_line(tmp_path: Path, holder) -> None:
    steps: list[tuple[str, int, int]] = []
    with pytest.raises(StoreError):
        StoreLock(tmp_path, timeout_s=1.5, notify=lambda _: None,
                  progress=lambda stage, done, total: steps.append((stage, done, total)))
    assert steps[0] == (folder.LOCK_STAGE, 0, 2)  # seconds waited of the timeout (rounded up)
    assert [done for _, done, _ in steps] == list(range(len(steps)))  # one step per second, none repeated


def test_in_a_log_the_wait_is_told_by_the_notes_not_a_line_per_second() -> None:
    import io

    from retrieval_gate.cli.app import CliProgress
    from retrieval_gate.publish.engine import LogProgress
    from retrieval_gate.render.console import SafeConsole

    buffer = io.StringIO()
    cli = CliProgress(SafeConsole(file=buffer))  # not a terminal
    lines: list[str] = []
    log = LogProgress(lines.append)
    for second in range(5):
        cli.step(folder.LOCK_STAGE, second, 900)
        log.step(folder.LOCK_STAGE, second, 900)
    cli.step("embedding passages", 3, 3)
    assert buffer.getvalue() == "embedded 3/3 passages\n" and lines == []
