"""Helpers shared by the tests: write input files, collect a loader's problems, run the CLI."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.errors import InputError, Problem


@contextmanager
def local_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A real HTTP server for ``handler`` on 127.0.0.1 (a free port), served from a thread; yields
    its base URL (``http://127.0.0.1:PORT``); shut down, closed and its thread joined on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def write_lines(path: Path, *lines: str | bytes) -> Path:
    """Each line (text or raw bytes) followed by a newline; parent folders made as needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join((ln if isinstance(ln, bytes) else ln.encode()) + b"\n" for ln in lines))
    return path


def problems_of(load: Callable[[Path], object], path: Path) -> list[Problem]:
    """The problems a loader reports for ``path`` (it must refuse it)."""
    with pytest.raises(InputError) as info:
        load(path)
    return list(info.value.problems)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``retrieval-gate ARGS`` in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository in ``tmp_path`` holding a copy of the examples' KB (``kb``) and golden set
    (``cases.jsonl``), made the current folder: the labelling loop's tests work in it."""
    import shutil
    import subprocess

    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    shutil.copytree(EXAMPLES / "kb", tmp_path / "kb")
    shutil.copy(EXAMPLES / "cases.jsonl", tmp_path / "cases.jsonl")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def eval_bm25(capsys: pytest.CaptureFixture[str], out: str, *extra: str) -> dict:
    """``eval`` of the example repo's suite with BM25 into ``out`` (exit 0 asserted); its results."""
    import json

    code, _, err = run_cli(["eval", "--kb", "kb", "--cases", "cases.jsonl", "--retriever", "bm25", "--out", out,
                            *extra], capsys)
    assert code == 0, err
    return json.loads(Path(out).read_text())
