"""Fixtures of the image tests: the action's image built by scripts/build-image, and a runner-like
``docker run`` (the way GitHub's runner starts a Docker container action).

These tests build the default (torch-free, ~0.7 GB) image — one build; the full variant is not
built here (its stage and scripts/build-image --full are checked in tests/e2e/test_action_files.py,
and the release workflow smoke-tests it) — so they are opt-in: they run under ``CI=true`` (``.ci/run``), with
``pytest -m image``, or with ``RG_IMAGE_TESTS=1``; otherwise they skip and say so. Where they run
but no Docker engine answers or can be started (not root, no dockerd), they skip with the reason
— except under CI, where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.action_harness import RUNNER_PREFIXES, TOKEN, input_defaults, parse_github_output

REPO = Path(__file__).resolve().parents[2]
IMAGE_TAG = os.environ.get("RG_IMAGE_TAG", "retrieval-gate:test")
IN_CI = os.environ.get("CI", "").lower() == "true"


def _selected(config: pytest.Config) -> bool:
    return IN_CI or os.environ.get("RG_IMAGE_TESTS") == "1" or (config.option.markexpr or "").strip() == "image"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.image)
            if not _selected(config):
                item.add_marker(pytest.mark.skip(
                    reason="image tests build the ~0.7 GB image: run `pytest -m image` (CI runs them)"))


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"image tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def docker_answers() -> bool:
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True, check=False).returncode == 0


@dataclass
class Built:
    tag: str
    seconds: float


@pytest.fixture(scope="session")
def image() -> Built:
    """The image, built by scripts/build-image (which starts dockerd and makes the base if needed)."""
    if shutil.which("docker") is None:
        _unavailable("no docker client (Debian: apt-get install docker.io)")
    if not docker_answers() and (os.geteuid() != 0 or shutil.which("dockerd") is None):
        _unavailable("no Docker engine answers, and none can be started here (needs root and dockerd)")
    if os.environ.get("RG_IMAGE_PREBUILT") == "1":  # the release workflow tests the image it pushes
        found = subprocess.run(["docker", "image", "inspect", IMAGE_TAG], capture_output=True, check=False)
        assert found.returncode == 0, f"RG_IMAGE_PREBUILT=1 but there is no image {IMAGE_TAG}"
        return Built(IMAGE_TAG, 0.0)
    start = time.monotonic()
    proc = subprocess.run([str(REPO / "scripts" / "build-image"), IMAGE_TAG], capture_output=True, text=True,
                          check=False, timeout=3600)
    assert proc.returncode == 0, proc.stderr
    record("build", time.monotonic() - start)
    return Built(IMAGE_TAG, time.monotonic() - start)


@dataclass
class ContainerRun:
    exit_code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    output_text: str
    summary: str
    seconds: float

    def everything(self) -> str:
        return "\n".join([self.stdout, self.stderr, self.output_text, self.summary])


class Runner:
    """One job's runner folders (/github/home, /github/workflow, /github/file_commands) beside one
    workspace, and ``docker run`` exactly as the runner starts a container action."""

    def __init__(self, tmp: Path, workspace: Path, tag: str) -> None:
        self.tmp, self.workspace, self.tag = tmp, workspace, tag
        self.runs = 0

    def run(self, *, event_name: str, event: dict, inputs: dict[str, str] | None = None, network: str = "none",
            api_url: str = "http://127.0.0.1:9", repository: str = "acme/rag", ref: str = "refs/heads/main",
            sha: str = "a" * 40) -> ContainerRun:
        self.runs += 1
        step = self.tmp / f"step{self.runs}"
        home, workflow, commands = step / "_github_home", step / "_github_workflow", step / "_runner_file_commands"
        for folder in (home, workflow, commands):
            folder.mkdir(parents=True)
        (workflow / "event.json").write_text(json.dumps(event), encoding="utf-8")
        output_name, summary_name = f"set_output_{self.runs}", f"step_summary_{self.runs}"
        (commands / output_name).touch()
        (commands / summary_name).touch()
        env = {
            "HOME": "/github/home", "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": "/github/workflow/event.json", "GITHUB_WORKSPACE": "/github/workspace",
            "GITHUB_REPOSITORY": repository, "GITHUB_API_URL": api_url, "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_SHA": sha, "GITHUB_REF": ref, "GITHUB_RUN_ID": str(7000 + self.runs),
            "GITHUB_OUTPUT": f"/github/file_commands/{output_name}",
            "GITHUB_STEP_SUMMARY": f"/github/file_commands/{summary_name}",
            "RUNNER_OS": "Linux", "RUNNER_TEMP": "/home/runner/work/_temp",
        }
        values = input_defaults()
        values.update(inputs or {})
        env.update({f"INPUT_{name.upper()}": value for name, value in values.items()})
        # As the runner does: `-e NAME` only, the values come from the environment (no token in argv).
        cmd = ["docker", "run", "--rm", "--network", network, "--workdir", "/github/workspace",
               "-v", f"{self.workspace}:/github/workspace", "-v", f"{home}:/github/home",
               "-v", f"{workflow}:/github/workflow", "-v", f"{commands}:/github/file_commands"]
        for name in env:
            cmd += ["-e", name]
        cmd.append(self.tag)
        proc_env = {k: v for k, v in os.environ.items() if not k.startswith(RUNNER_PREFIXES)}
        proc_env.update(env)
        start = time.monotonic()
        proc = subprocess.run(cmd, env=proc_env, capture_output=True, text=True, check=False, timeout=900)
        seconds = time.monotonic() - start
        output_text = (commands / output_name).read_text(encoding="utf-8")
        return ContainerRun(proc.returncode, proc.stdout, proc.stderr, parse_github_output(output_text),
                            output_text, (commands / summary_name).read_text(encoding="utf-8"), seconds)


def example_workspace(path: Path) -> Path:
    """A checkout of a repository that uses the action: the example suite and its config."""
    path.mkdir(parents=True)
    shutil.copytree(REPO / "examples", path / "examples")
    shutil.copy(REPO / "retrieval-gate.yml", path / "retrieval-gate.yml")
    return path


def files_under(root: Path) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file())


def assert_token_absent(run_text: str, *folders: Path) -> None:
    assert TOKEN not in run_text
    for folder in folders:
        for path in files_under(folder):
            assert TOKEN.encode() not in path.read_bytes(), path


def record(name: str, seconds: float) -> None:
    """Append a timing to the file named by RG_IMAGE_TIMINGS (docs/action.md's image figures come from it)."""
    target = os.environ.get("RG_IMAGE_TIMINGS")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps({"name": name, "seconds": round(seconds, 1)}) + "\n")
