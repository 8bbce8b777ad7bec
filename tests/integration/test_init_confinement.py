"""``retrieval-gate init`` writes only inside the repository: a symlinked ``.github/`` or
``baselines/`` and hostile ``--suite`` names are refused with nothing written, every value it puts
in YAML reads back as the value typed, and a ``.gitignore`` that is a symbolic link is kept unless
``--force``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import run_cli
from tests.integration.test_init_cli import CARDS, CASES, REF


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(root)], check=True)
    (root / "kb").mkdir()
    for name, text in CARDS.items():
        (root / "kb" / f"{name}.md").write_text(text, encoding="utf-8")
    (root / "eval").mkdir()
    (root / "eval" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if ".git/" not in p.as_posix() + "/"}


@pytest.mark.parametrize("linked", [".github", "baselines"])
def test_a_symlinked_folder_leading_out_of_the_repository_is_refused_and_nothing_written(
        repo: Path, tmp_path: Path, capsys, linked: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / linked).symlink_to(outside, target_is_directory=True)
    before = _files(repo)
    code, _, err = run_cli(["init", "--action-ref", REF], capsys)  # with the baseline: refused before the eval
    assert code == 2, err
    assert "outside the repository" in err and linked in err
    assert list(outside.iterdir()) == [] and _files(repo) == before


@pytest.mark.parametrize("suite", ["../../../escaped", "x\n      mode: write-baseline", ".hidden", "a\\b",
                                   "bidi\u202eevil", "x" * 101, ""])
def test_a_suite_name_the_action_would_refuse_is_refused_by_init(repo: Path, tmp_path: Path, capsys,
                                                                   suite: str) -> None:
    before = _files(repo)
    code, _, err = run_cli(["init", "--action-ref", REF, "--suite", suite], capsys)
    assert code == 2
    assert err.startswith("error: --suite ")
    assert _files(repo) == before and not (tmp_path / "escaped.json").exists()


BRANCH = 'release/"x"]#{y},z'  # a name git takes (git check-ref-format --branch), YAML syntax in plain text


@pytest.mark.parametrize("suite", ["true", "1.5", "my suite: two", "null", "#x", "café-ünï"])
def test_every_value_init_writes_reads_back_as_typed(repo: Path, capsys, suite: str) -> None:
    code, _, err = run_cli(["init", "--no-baseline", "--action-ref", REF, "--suite", suite,
                            "--branch", BRANCH], capsys)
    assert code == 0, err
    config = yaml.safe_load((repo / "retrieval-gate.yml").read_text(encoding="utf-8"))
    assert list(config["suites"]) == [suite]
    caller = yaml.safe_load((repo / ".github/workflows/retrieval.yml").read_text(encoding="utf-8"))
    assert caller["jobs"]["retrieval"]["with"] == {"suite": suite}  # one key: nothing added under with:
    assert caller[True]["push"] == {"branches": [BRANCH]}


def test_a_symlinked_gitignore_is_kept_without_force(repo: Path, capsys) -> None:
    (repo / "ignore-rules").write_text("node_modules/\n", encoding="utf-8")
    (repo / ".gitignore").symlink_to("ignore-rules")
    code, out, err = run_cli(["init", "--no-baseline", "--action-ref", REF], capsys)
    assert code == 0, err
    assert "kept .gitignore (a symbolic link" in out
    rules = repo / "ignore-rules"
    assert (repo / ".gitignore").is_symlink() and rules.read_text(encoding="utf-8") == "node_modules/\n"
    code, out, err = run_cli(["init", "--no-baseline", "--action-ref", REF, "--force"], capsys)
    assert code == 0, err
    assert (repo / ".gitignore").is_symlink() and ".retrieval-gate/" in rules.read_text(encoding="utf-8")
