"""scripts/lint-workflows: zizmor finds nothing in the workflows, the docs' blocks and what init
writes — and the script does fail on a finding (a workflow a newcomer might paste)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "lint-workflows"
UNPINNED = """\
name: pasted
on: [pull_request]
permissions: {}
jobs:
  check:
    runs-on: ubuntu-latest
    permissions:
      pull-requests: write
    steps:
      - uses: actions/checkout@v4
      - uses: someone/retrieval-gate@v1
"""

pytestmark = pytest.mark.skipif(shutil.which("zizmor") is None, reason="zizmor is not installed (pip install zizmor)")


def test_every_workflow_a_user_can_run_has_no_finding():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout
    assert "from the docs and init" in done.stdout


def test_a_finding_fails_the_lint(tmp_path):
    bad = tmp_path / "pasted.yml"
    bad.write_text(UNPINNED, encoding="utf-8")
    done = subprocess.run([sys.executable, str(SCRIPT), str(bad)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 1
    assert "unpinned-uses" in done.stderr and "artipacked" in done.stderr
