"""``--out`` writes only a regular file or a missing path: a FIFO, a device node, a socket, a
folder or a link to one of them is refused (exit 2, one ``cannot write`` line) and left as it was;
a symbolic link to a regular file is written through (the file replaced, the link kept)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from tests.helpers import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _score(out: Path, capsys) -> tuple[int, str, str]:
    return run_cli(["subset", "--cases", str(EXAMPLES / "cases.jsonl"), "--per-cell", "1", "--out", str(out)], capsys)


def _refused(out: Path, capsys, kind: str) -> None:
    code, _, err = _score(out, capsys)
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot write: refused" in errors[0] and kind in errors[0], err


def test_a_fifo_is_refused_and_stays_a_fifo(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    _refused(fifo, capsys, "a FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root (the action's container is root)")
def test_a_device_node_is_refused_and_stays_a_device(tmp_path: Path, capsys) -> None:
    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    _refused(device, capsys, "a device")
    info = os.lstat(device)
    assert stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3)


def test_a_socket_is_refused(tmp_path: Path, capsys) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        _refused(path, capsys, "a socket")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_link_to_the_processes_stdout_is_refused(tmp_path: Path, capsys) -> None:
    read_end, write_end = os.pipe()
    try:
        link = tmp_path / "out.json"
        link.symlink_to(f"/proc/self/fd/{write_end}")
        _refused(link, capsys, "not a regular file")
        assert link.is_symlink()
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_dangling_link_is_refused(tmp_path: Path, capsys) -> None:
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "elsewhere" / "nothing.json")
    _refused(link, capsys, "does not exist")
    assert link.is_symlink() and not (tmp_path / "elsewhere").exists()


def test_a_link_to_a_regular_file_is_written_through(tmp_path: Path, capsys) -> None:
    target = tmp_path / "real.json"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    code, _, err = _score(link, capsys)
    assert code == 0, err
    assert link.is_symlink() and target.read_text(encoding="utf-8").startswith('{"')
