"""A store or cache this user may not write (root-owned files left by a container step, a later
step running as the runner user): exit 2 naming the path and the fix, and nothing deleted.

Run as ``nobody`` through a subprocess (root only; skipped otherwise). Where the project's own
interpreter lives where ``nobody`` cannot reach it, the folder check runs under the system Python
(it needs only the standard library) and the whole-CLI cases are skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.conftest import REPO, SAFETY_NET_S, Warm, eval_args, run_cli

NOBODY = 65534

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="needs root to run a subprocess as nobody")


def can_run_as_nobody(python: str) -> bool:
    def drop() -> None:
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    try:
        done = subprocess.run([python, "-c", "import sys"], preexec_fn=drop, capture_output=True, timeout=60)
    except OSError:
        return False
    return done.returncode == 0


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def world_readable(root: Path) -> None:
    """Readable and enterable by anyone, writable by its owner (root) only."""
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for folder in reversed(root.parents):  # pytest's own temp folders are closed to other users
        if folder.stat().st_mode & 0o001 == 0:
            folder.chmod(folder.stat().st_mode | 0o001)


def test_the_folder_check_names_the_path_and_the_fix_as_nobody(warm: Warm, store_copy: Callable[[], Path]) -> None:
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    if not can_run_as_nobody(python):
        pytest.skip(f"nobody cannot run {python}")
    store = store_copy()
    world_readable(store)
    before = snapshot(store)
    code = ("import sys\nfrom pathlib import Path\nfrom retrieval_gate.errors import StoreError\n"
            "from retrieval_gate.store.folder import refuse_unusable\n"
            "try:\n    refuse_unusable(Path(sys.argv[1]))\n"
            "except StoreError as exc:\n    print(exc)\n    sys.exit(2)\n")

    def drop() -> None:
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    done = subprocess.run([python, "-c", code, str(store)], preexec_fn=drop, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": os.environ.get("PATH", "")},
                          timeout=SAFETY_NET_S)
    assert done.returncode == 2, done.stderr
    assert f"store {store} is not writable by this user (uid {NOBODY}; it belongs to uid 0)" in done.stdout
    assert f"chown -R {NOBODY} {store}" in done.stdout
    assert snapshot(store) == before


@pytest.mark.parametrize("what", ["store", "cases"])
def test_an_eval_as_nobody_on_root_owned_files_exits_2_naming_the_path(warm: Warm, store_copy: Callable[[], Path],
                                                                       tmp_path: Path, what: str) -> None:
    if not can_run_as_nobody(sys.executable):
        pytest.skip(f"nobody cannot run {sys.executable} (its folder is closed to other users)")
    store = store_copy()
    suite_dir = tmp_path / "suite"
    shutil.copytree(warm.suite.kb, suite_dir / "kb")
    cases = suite_dir / "cases.jsonl"
    shutil.copy(warm.suite.cases, cases)
    world_readable(tmp_path)
    if what == "cases":
        cases.chmod(0o600)  # root's, unreadable to nobody
        shutil.chown(store, NOBODY, NOBODY)
        for path in store.rglob("*"):
            shutil.chown(path, NOBODY, NOBODY)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    shutil.chown(out_dir, NOBODY, NOBODY)
    before = snapshot(store)
    from tests.faults.conftest import Suite

    done = run_cli(eval_args(Suite(kb=suite_dir / "kb", cases=cases), store, out_dir / "r.json"), cwd=out_dir,
                   user=NOBODY)
    assert done.returncode == 2, done.stderr
    # ours ("error: …"), or typer's own usage error (typer ≥ 0.29 checks that a path option is readable)
    errors = [line for line in done.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(store if what == "store" else cases) in errors[0]
    assert snapshot(store) == before and not (out_dir / "r.json").exists()
