"""docs/ci.md's pipelines, tested as far as they can be here: each YAML block parses, and every
``retrieval-gate`` command in them names a real command with options it has and, run on real
files, writes a JUnit file."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from retrieval_gate.forge.gitlab.ci import gitlab_ci
from tests.helpers import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)


def _blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def _commands() -> list[list[str]]:
    out = []
    for _, block in _blocks():
        for match in re.finditer(r"retrieval-gate (\w+(?: update)?)((?: --?[\w-]+(?: [^\s'|]+)?)*)", block):
            out.append(["retrieval-gate", *shlex.split(match.group(1)), *shlex.split(match.group(2))])
    return out


def test_every_yaml_block_parses() -> None:
    yaml_blocks = [text for lang, text in _blocks() if lang == "yaml"]
    assert len(yaml_blocks) >= 3  # GitLab, Azure, CircleCI
    for text in yaml_blocks:
        assert yaml.safe_load(text) is not None


def test_the_gitlab_block_is_what_init_writes() -> None:
    shown = next(yaml.safe_load(text) for lang, text in _blocks()
                 if lang == "yaml" and "merge_request_event" in text)
    image = shown["retrieval"]["image"]["name"]
    assert shown == yaml.safe_load(gitlab_ci(image=image, suite="default", kb="kb", kb_is_file=False))
    assert shown["retrieval"]["artifacts"]["reports"]["junit"] == "retrieval-gate-out/junit.xml"


@pytest.mark.parametrize("argv", _commands(), ids=lambda a: " ".join(a[1:3]))
def test_every_command_names_options_the_cli_has(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    words = [w for w in argv[1:] if not w.startswith("-")]
    sub = words[:2] if words[:2] == ["baseline", "update"] else words[:1]
    code, out, _ = run_cli([*sub, "--help"], capsys)
    assert code == 0
    for flag in (w for w in argv if w.startswith("--")):
        assert flag in out, f"{' '.join(sub)} has no {flag}"
    if "--format" in argv:
        assert argv[argv.index("--format") + 1] == "junit"
