"""One writer per store: two evals with different KBs (or chunking) on one store folder each give
their own clean numbers; a waiter stops after its timeout naming the holder; a killed holder's
lock is released by the kernel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.conftest import CARDS, SAFETY_NET_S, Warm, cli_env, eval_args, make_suite, numbers, run_cli

pytestmark = pytest.mark.model  # the real bundled model, in a subprocess

LOCK = "retrieval-gate-store.lock"


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "retrieval_gate", *args], cwd=cwd, env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def other_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict]:
    """A second KB version (six of the ten cards) and its clean numbers on a store of its own."""
    root = tmp_path_factory.mktemp("other")
    suite = make_suite(root / "suite", CARDS[:6])
    out = root / "clean.json"
    done = run_cli(eval_args(suite, root / "store", out), cwd=root)
    assert done.returncode == 0, done.stderr
    return suite, json.loads(out.read_text())


def test_two_evals_with_different_kbs_on_one_store_each_get_their_own_numbers(
        warm: Warm, store_copy: Callable[[], Path], tmp_path: Path, other_suite: tuple[object, dict]) -> None:
    suite_b, clean_b = other_suite
    store = store_copy()
    for trial in range(2):
        out_a, out_b = tmp_path / f"a{trial}.json", tmp_path / f"b{trial}.json"
        first = start(eval_args(warm.suite, store, out_a), tmp_path)
        second = start(eval_args(suite_b, store, out_b), tmp_path)  # type: ignore[arg-type]
        errs = [proc.communicate(timeout=SAFETY_NET_S)[1] for proc in (first, second)]
        assert (first.returncode, second.returncode) == (0, 0), errs
        assert numbers(json.loads(out_a.read_text())) == numbers(warm.results)
        assert numbers(json.loads(out_b.read_text())) == numbers(clean_b)


def test_different_chunking_on_one_store_waits_its_turn_and_rebuilds(warm: Warm, store_copy: Callable[[], Path],
                                                                     tmp_path: Path) -> None:
    store = store_copy()
    clean_small = tmp_path / "clean-small.json"
    done = run_cli(eval_args(warm.suite, tmp_path / "own", clean_small, "--chunk-size", "400"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out_a, out_b = tmp_path / "a.json", tmp_path / "b.json"
    first = start(eval_args(warm.suite, store, out_a), tmp_path)
    second = start(eval_args(warm.suite, store, out_b, "--chunk-size", "400"), tmp_path)
    errs = [proc.communicate(timeout=SAFETY_NET_S)[1] for proc in (first, second)]
    assert (first.returncode, second.returncode) == (0, 0), errs
    assert numbers(json.loads(out_a.read_text())) == numbers(warm.results)
    assert numbers(json.loads(out_b.read_text())) == numbers(json.loads(clean_small.read_text()))


def test_a_waiter_gives_up_after_its_timeout_naming_the_holder(warm: Warm, store_copy: Callable[[], Path],
                                                               tmp_path: Path) -> None:
    import fcntl

    store = store_copy()
    fd = os.open(store / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "command": "retrieval-gate eval (the holder)"}).encode())
        config = tmp_path / "retrieval-gate.yml"
        config.write_text("suites:\n  default:\n    store:\n      lock_timeout_s: 1\n", encoding="utf-8")
        out = tmp_path / "r.json"
        done = run_cli(eval_args(warm.suite, store, out, "--config", str(config)), cwd=tmp_path)
    finally:
        os.close(fd)
    assert done.returncode == 2, done.stderr
    assert f"in use by pid {os.getpid()} (retrieval-gate eval (the holder))" in done.stderr
    assert "waiting up to 1 s" in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "for more than 1 s" in errors[0]
    assert not out.exists() and "Traceback" not in done.stderr


def test_a_killed_holders_lock_is_released_by_the_kernel(warm: Warm, store_copy: Callable[[], Path],
                                                         tmp_path: Path) -> None:
    store = store_copy()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(store / LOCK)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.write(fd, b'{\"pid\": %d, \"command\": \"killed\"}' % os.getpid())\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=SAFETY_NET_S)
    out = tmp_path / "r.json"
    done = run_cli(eval_args(warm.suite, store, out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert numbers(json.loads(out.read_text())) == numbers(warm.results)
    assert "in use by" not in done.stderr
