"""Runs ``retrieval-gate action`` as the runner does: GITHUB_* and INPUT_* environment (every
input declared in action.yml gets its default, as the runner sets it), an event payload file,
GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files, the workspace as working directory — in process,
through ``cli.main``, against a FakeGitHub over HTTP. The engine is a fake of our interface unless
a test asks for the real one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_gate.cli import main
from retrieval_gate.forge import FORGES
from retrieval_gate.forge.github import api as github_api
from retrieval_gate.publish import engine as engine_module
from tests.e2e.fake_github import FakeGitHub

REPO = Path(__file__).resolve().parents[2]
TOKEN = "ghs_FAKEtoken0123456789abcdefSECRETvalue"
RUNNER_PREFIXES = ("GITHUB_", "INPUT_", "RUNNER_", "ACTIONS_")
# Every forge's runner variables and the forges' token variables (the registry's
# ``Forge.variable_prefixes``): none leaks from one run into the next.
FORGE_PREFIXES = tuple(dict.fromkeys((*RUNNER_PREFIXES, *(p for forge in FORGES for p in forge.variable_prefixes))))


def run_entry_point(*, env: dict[str, str], workspace: Path, engine: Any, monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``retrieval-gate action`` in process, as a runner of any forge starts it: every forge's
    variables cleared, ``env`` set, ``workspace`` the working directory, ``engine`` the action's
    engine; returns the exit code, stdout and stderr."""
    for key in list(os.environ):
        if key.startswith(FORGE_PREFIXES):
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(workspace)
    monkeypatch.setattr(engine_module, "real_engine", lambda: engine)
    # The local fake has no secondary rate limit: no second's pause before each write (our own
    # tuning constant; its production value is checked in tests/e2e/test_action_github_adapter.py).
    monkeypatch.setattr(github_api, "SECONDS_BETWEEN_WRITES", None)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["action"])
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def action_yml() -> dict[str, Any]:
    return yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


def input_defaults() -> dict[str, str]:
    """Each declared input's default, as the runner passes it (``${{ github.token }}`` → TOKEN)."""
    out = {}
    for name, spec in (action_yml().get("inputs") or {}).items():
        default = str((spec or {}).get("default", ""))
        out[name] = TOKEN if default == "${{ github.token }}" else default
    return out


def parse_github_output(text: str) -> dict[str, str]:
    """Parse ``$GITHUB_OUTPUT``: ``name=value`` lines and ``name<<DELIM`` … ``DELIM`` blocks."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := re.fullmatch(r"([^=<]+)<<(.+)", line):
            name, delim = m.groups()
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


@dataclass
class ActionRun:
    exit_code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    output_text: str

    def everything(self) -> str:
        return "\n".join([self.stdout, self.stderr, self.output_text, self.summary])


class ActionWorld:
    """One repository checkout plus the runner's files, for one test."""

    def __init__(self, *, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 github: FakeGitHub, engine: Any) -> None:
        self.tmp = tmp_path
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.runner_dir = tmp_path / "runner"
        self.runner_dir.mkdir()
        self.monkeypatch = monkeypatch
        self.capsys = capsys
        self.github = github
        self.engine = engine
        self.runs = 0

    def pr_event(self, number: int, *, base_sha: str, head_sha: str = "f" * 40, fork: bool = False) -> dict[str, Any]:
        repo = self.github.repository
        return {
            "action": "synchronize",
            "number": number,
            "pull_request": {
                "number": number,
                "base": {"sha": base_sha, "ref": self.github.default_branch, "repo": {"full_name": repo}},
                "head": {"sha": head_sha, "ref": "feature",
                         "repo": {"full_name": "someone/rag" if fork else repo}},
            },
            "repository": {"full_name": repo, "default_branch": self.github.default_branch},
        }

    def push_event(self, *, ref: str) -> dict[str, Any]:
        repo = self.github.repository
        return {"ref": ref, "repository": {"full_name": repo, "default_branch": self.github.default_branch}}

    def environment(self, *, event_name: str, event: dict[str, Any], inputs: dict[str, str] | None = None,
                    ref: str = "refs/heads/main", sha: str = "a" * 40,
                    extra_env: dict[str, str] | None = None) -> dict[str, str]:
        self.runs += 1
        event_path = self.runner_dir / f"event{self.runs}.json"
        event_path.write_text(json.dumps(event), encoding="utf-8")
        env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": self.github.repository,
            "GITHUB_API_URL": self.github.api_url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_SHA": sha,
            "GITHUB_REF": ref,
            "GITHUB_RUN_ID": f"{4200 + self.runs}",
            "GITHUB_OUTPUT": str(self.runner_dir / f"output{self.runs}"),
            "GITHUB_STEP_SUMMARY": str(self.runner_dir / f"summary{self.runs}"),
        }
        values = input_defaults()
        values.update(inputs or {})
        for name, value in values.items():
            env[f"INPUT_{name.upper()}"] = value
        env.update(extra_env or {})
        return env

    def run(self, **kwargs: Any) -> ActionRun:
        """Run the entry point with a clean runner environment; returns what a runner would see."""
        env = self.environment(**kwargs)
        code, stdout, stderr = run_entry_point(env=env, workspace=self.workspace, engine=self.engine,
                                               monkeypatch=self.monkeypatch, capsys=self.capsys)
        output_path = Path(env["GITHUB_OUTPUT"])
        summary_path = Path(env["GITHUB_STEP_SUMMARY"])
        output_text = output_path.read_text(encoding="utf-8") if output_path.exists() else ""
        return ActionRun(
            exit_code=code,
            stdout=stdout,
            stderr=stderr,
            outputs=parse_github_output(output_text),
            summary=summary_path.read_text(encoding="utf-8") if summary_path.exists() else "",
            output_text=output_text,
        )
