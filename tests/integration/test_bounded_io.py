"""Reads once, writes under a lock, waits with a bound: a run from a pipe
scores like the file; ten concurrent ``baseline update`` processes keep every history entry; an
HTTP retriever that trickles its answer is cut off at its deadline and fails that case only; a
``python:`` retriever raising ``SystemExit`` fails one case, not the run; an internal error is one
line and exit 3."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_gate.retrieve.custom import HttpRetriever, PythonRetriever
from retrieval_gate.retrieve.settings import HttpSettings
from tests.conftest import EXAMPLES
from tests.helpers import local_server

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + str(REPO)
    env.pop("RETRIEVAL_GATE_DEBUG", None)
    return env


def _cli(*args: str, cwd: Path, stdin: bytes | None = None, shell: str | None = None) -> subprocess.CompletedProcess:
    command = shell if shell is not None else [sys.executable, "-m", "retrieval_gate", *args]
    return subprocess.run(command, cwd=cwd, env=_env(), input=stdin, capture_output=True, timeout=300,
                          shell=shell is not None, executable="/bin/bash" if shell is not None else None)


@pytest.fixture
def example_run(tmp_path: Path) -> tuple[Path, Path]:
    """The examples' golden set and a JSONL run that finds the first gold card of each case."""
    cases = EXAMPLES / "cases.jsonl"
    rows = []
    for line in cases.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            gold = case.get("gold") or []
            rows.append(json.dumps({"id": case["id"], "retrieved": ["nothing", *gold[:1]]}))
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return cases, run


def _hit(path: Path) -> tuple[float, int, int]:
    data = json.loads(path.read_text(encoding="utf-8"))
    cell = data["aggregates"]["overall"]["hit@5"]
    return cell["value"], cell["n"], data["completeness"]["failed"]


@pytest.mark.parametrize("how", ["process substitution", "stdin pipe"])
def test_a_run_read_from_a_pipe_scores_like_the_file(how: str, example_run, tmp_path: Path) -> None:
    cases, run = example_run
    done = _cli("score", "--run", str(run), "--cases", str(cases), "--out", str(tmp_path / "file.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if how == "process substitution":
        piped = _cli(cwd=tmp_path, shell=f"'{sys.executable}' -m retrieval_gate score --run <(cat '{run}') "
                                          f"--cases '{cases}' --out '{tmp_path / 'pipe.json'}'")
    else:
        piped = _cli("score", "--run", "/dev/stdin", "--cases", str(cases), "--out", str(tmp_path / "pipe.json"),
                     cwd=tmp_path, stdin=run.read_bytes())
    assert piped.returncode == 0, piped.stderr
    value, n, failed = _hit(tmp_path / "file.json")
    assert value == 1.0 and failed == 0  # the run finds a gold card of every case at rank 2
    assert _hit(tmp_path / "pipe.json") == (value, n, failed)


def test_a_partly_matching_run_warns_and_counts_the_missing_cases(example_run, tmp_path: Path) -> None:
    cases, run = example_run
    lines = run.read_text(encoding="utf-8").splitlines()
    run.write_text("\n".join(lines[:-3]) + "\n", encoding="utf-8")
    done = _cli("score", "--run", str(run), "--cases", str(cases), "--out", str(tmp_path / "r.json"), cwd=tmp_path)
    assert done.returncode == 0
    assert b"warning:" in done.stderr and b"3 of 62 cases are not in the run" in done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["completeness"]["failed"] == 3


def test_ten_concurrent_baseline_updates_keep_every_history_entry(example_run, tmp_path: Path) -> None:
    cases, run = example_run
    results = tmp_path / "results.json"
    baseline = tmp_path / "baselines" / "default.json"
    assert _cli("score", "--run", str(run), "--cases", str(cases), "--out", str(results), cwd=tmp_path).returncode == 0
    assert _cli("baseline", "update", "--results", str(results), "--baseline", str(baseline), "--sha", "s0",
                cwd=tmp_path).returncode == 0
    procs = [subprocess.Popen([sys.executable, "-m", "retrieval_gate", "baseline", "update", "--results", str(results),
                               "--baseline", str(baseline), "--sha", f"s{i}"], cwd=tmp_path, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(1, 11)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    history = json.loads(baseline.read_text(encoding="utf-8"))["history"]
    assert sorted(entry["sha"] for entry in history) == sorted(f"s{i}" for i in range(11))
    assert [p.name for p in baseline.parent.iterdir()] == ["default.json"]  # no lock or temporary file left


def test_a_symlinked_baseline_is_written_through(example_run, tmp_path: Path) -> None:
    cases, run = example_run
    results = tmp_path / "results.json"
    assert _cli("score", "--run", str(run), "--cases", str(cases), "--out", str(results), cwd=tmp_path).returncode == 0
    target = tmp_path / "store" / "v1.json"
    assert _cli("baseline", "update", "--results", str(results), "--baseline", str(target), "--sha", "a",
                cwd=tmp_path).returncode == 0
    link = tmp_path / "current.json"
    link.symlink_to(target)
    done = _cli("baseline", "update", "--results", str(results), "--baseline", str(link), "--sha", "b", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert [e["sha"] for e in json.loads(target.read_text())["history"]] == ["a", "b"]


# ---- an HTTP endpoint that trickles ------------------------------------------------------------

@pytest.fixture
def trickling_server() -> Iterator[str]:
    """An endpoint on 127.0.0.1 that sends one byte every 0.2 s, forever: no single read ever
    times out, only a total deadline can end the request."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                while not stop.is_set():
                    conn.sendall(b"H")
                    time.sleep(0.2)
            except OSError:
                return

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/search"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_trickling_http_endpoint_is_cut_off_at_the_deadline(trickling_server: str) -> None:
    retriever = HttpRetriever(url=trickling_server,
                              options=HttpSettings(timeout_s=5.0, deadline_s=1.0, retries=0, concurrency=1))
    answers: list = []
    worker = threading.Thread(target=lambda: answers.extend(retriever.search(["q1", "q2"], 5)), daemon=True)
    worker.start()
    worker.join(120)  # a generous outer bound: without the deadline this waits forever
    assert not worker.is_alive(), "the HTTP retriever never gave up"
    assert [a.error for a in answers] == [f"{retriever.name}: no complete answer within 1 s (after 1 attempt(s))"] * 2


def test_an_http_answer_over_the_size_bound_fails_the_case(tmp_path: Path) -> None:
    from http.server import BaseHTTPRequestHandler

    class Big(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"ids": ["x" * 50] * 100}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with local_server(Big) as base:
        url = f"{base}/"
        small = HttpRetriever(url=url, options=HttpSettings(max_bytes=1000, retries=0, concurrency=1))
        large = HttpRetriever(url=url, options=HttpSettings(retries=0, concurrency=1))
        assert small.search(["q"], 5)[0].error == f"{small.name}: answer is longer than 1,000 bytes"
        assert large.search(["q"], 5)[0].ids == ("x" * 50,)


def test_system_exit_from_a_python_retriever_fails_one_case() -> None:
    def search(query: str, limit: int) -> list[str]:
        if query == "bad":
            raise SystemExit(7)
        return ["A"]

    answers = PythonRetriever(target="m:search", func=search).search(["good", "bad", "good"], 5)
    assert [a.ids for a in answers] == [("A",), (), ("A",)]
    assert answers[1].error == "python:m:search: SystemExit: 7"


def test_system_exit_from_a_python_retriever_fails_one_case_of_an_eval(tmp_path: Path) -> None:
    (tmp_path / "kb.jsonl").write_text("".join(json.dumps({"id": i, "text": i}) + "\n" for i in "AB"))
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "query": "good", "gold": ["A"]}) + "\n"
                                          + json.dumps({"id": "c2", "query": "bad", "gold": ["A"]}) + "\n")
    (tmp_path / "ret.py").write_text("def search(query, limit):\n    if query == 'bad':\n        raise SystemExit(7)\n"
                                     "    return ['A']\n")
    done = _cli("eval", "--kb", "kb.jsonl", "--cases", "cases.jsonl", "--retriever", "python:ret.py:search",
                "--ephemeral", "--out", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["completeness"]["failed"] == 1 and data["completeness"]["failed_ids"] == ["c2"]
    assert data["aggregates"]["overall"]["hit@1"] == {"n": 2, "value": 0.5}


@pytest.mark.parametrize("debug", [False, True])
def test_an_internal_error_is_one_line_and_exit_3(debug: bool, tmp_path: Path) -> None:
    """A bug (here: a results file whose reader is made to fail by a patched module) is reported
    as ``internal error: …, please report`` with exit 3 — the traceback only under debug."""
    (tmp_path / "sitecustomize.py").write_text(
        "import retrieval_gate.artifacts.run_files as r\n"
        "def boom(path):\n    raise RuntimeError('simulated bug')\n"
        "r.read_results = boom\n")
    env = _env()
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    if debug:
        env["RETRIEVAL_GATE_DEBUG"] = "1"
    code = ("import sys, retrieval_gate.cli.baseline as b, retrieval_gate.artifacts.run_files as r; "
            "b.read_results = r.read_results; from retrieval_gate.cli import main; main(sys.argv[1:])")
    done = subprocess.run([sys.executable, "-c", code, "baseline", "update", "--results", "x.json",
                           "--baseline", "b.json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert "internal error: RuntimeError: simulated bug" in done.stderr and "please report" in done.stderr
    assert ("Traceback" in done.stderr) is debug
    assert not (tmp_path / "b.json").exists()
