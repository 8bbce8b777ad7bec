"""Fault injection on copies of a real warm store: a tiny KB (ten cards of the example suite),
the real bundled model, the real CLI in a subprocess. The warm store is built once per session;
each test damages its own copy.

Every faulted run must end one of two ways: numbers equal to the clean run's, or exit 2 with one
line on stderr and no results file. Subprocess timeouts are a safety net only (no timed asserts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SAFETY_NET_S = 600
CARDS = ("account-delete", "account-reset-password", "account-two-factor", "billing-cancel-subscription",
         "billing-change-plan", "billing-update-card", "integrations-api-keys", "payments-refund-card",
         "payments-refund-bank-transfer", "invoicing-create")


@dataclass
class Suite:
    kb: Path
    cases: Path


@dataclass
class Warm:
    suite: Suite
    store: Path  # the clean warm store: copy it, never damage it
    results: dict[str, Any]  # the clean run's results


def make_suite(root: Path, cards: tuple[str, ...]) -> Suite:
    kb = root / "kb"
    kb.mkdir(parents=True)
    ids = set()
    for name in cards:
        source = EXAMPLES / "kb" / "en-US" / f"{name}.md"
        if source.is_file():
            shutil.copy(source, kb / source.name)
            ids.add(f"en-{name}")
    lines = []
    for line in (EXAMPLES / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case.get("gold") and set(case["gold"]) <= ids:
            lines.append(line)
    cases = root / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(lines) >= 5, "the tiny suite needs cases"
    return Suite(kb=kb, cases=cases)


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RETRIEVAL_GATE_"))}
    env["PYTHONPATH"] = str(REPO / "src")
    env["HF_HUB_OFFLINE"] = "1"
    return env


def run_cli(args: list[str], *, cwd: Path, user: int | None = None,
            timeout: float = SAFETY_NET_S) -> subprocess.CompletedProcess[str]:
    def drop() -> None:
        if user is not None:
            os.setgid(user)
            os.setuid(user)

    return subprocess.run([sys.executable, "-m", "retrieval_gate", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=drop if user is not None else None)


def eval_args(suite: Suite, store: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--kb", str(suite.kb), "--cases", str(suite.cases), "--store", str(store),
            "--k", "1,3,5", "--out", str(out), *extra]


def numbers(results: dict[str, Any]) -> Any:
    """What a baseline is made of: per-case scores and every aggregate (not timings or notes)."""
    cases = [{k: v for k, v in case.items() if k != "latency_ms"} for case in results["cases"]]
    return {"cases": cases, "aggregates": results["aggregates"], "completeness": results["completeness"]}


@pytest.fixture(scope="session")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Warm:
    root = tmp_path_factory.mktemp("warm")
    suite = make_suite(root / "suite", CARDS)
    store = root / "store"
    out = root / "clean.json"
    done = run_cli(eval_args(suite, store, out), cwd=root)
    assert done.returncode == 0, done.stderr
    return Warm(suite=suite, store=store, results=json.loads(out.read_text(encoding="utf-8")))


@pytest.fixture
def store_copy(warm: Warm, tmp_path: Path) -> Callable[[], Path]:
    def copy() -> Path:
        target = tmp_path / f"store{len(list(tmp_path.glob('store*')))}"
        shutil.copytree(warm.store, target)
        return target

    return copy


def assert_clean_or_refused(done: subprocess.CompletedProcess[str], out: Path, warm: Warm) -> str:
    """The faulted run gave the clean numbers (exit 0) or stopped with exit 2, one line, no file.
    Returns which ("clean" / "refused")."""
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode == 0:
        assert numbers(json.loads(out.read_text(encoding="utf-8"))) == numbers(warm.results)
        return "clean"
    assert done.returncode == 2, (done.returncode, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert not out.exists()
    return "refused"
