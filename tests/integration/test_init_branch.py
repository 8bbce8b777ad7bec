"""``init --branch``: a name git would not take as a branch is exit 2 before anything is written,
and a name git takes — quotes, brackets and all — is written into every
pipeline as a YAML scalar that reads back as that name. git itself is the reference."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from retrieval_gate.scaffold.plan import branch_problem
from tests.helpers import run_cli

REF = "acme/retrieval-gate@" + "cd" * 20
IMAGE = "ghcr.io/acme/retrieval-gate:1.0.0@sha256:" + "a" * 64
INIT = ["init", "--no-baseline", "--kb", "kb", "--cases", "cases.jsonl"]
HOSTILE = 'main"]\n  - "*'
NAMES = ["main", "release/1.2", "feat/x-y_z", 'main"]', "it's", "a#b", "100%", "{x}", "é-ünï", "a.b",
         HOSTILE, "", "-main", "/main", "main/", "main.", "a..b", "a//b", "a b", "a\tb", "a~b", "a^b", "a:b",
         "a?b", "a*b", "a[b", "a\\b", "a@{b", "@", "x.lock", "x/.hidden", "x/y.lock/z", "a\x7fb", "HEAD"]


def git_takes(name: str, cwd: Path) -> bool:
    """Outside a repository, so that ``@`` is the name ``@`` and not the branch checked out."""
    done = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, check=False, cwd=cwd)
    return done.returncode == 0


@pytest.mark.parametrize("name", NAMES, ids=[json.dumps(n) for n in NAMES])
def test_branch_names_are_judged_as_git_check_ref_format_judges_them(name: str, tmp_path: Path) -> None:
    assert (branch_problem(name) is None) is git_takes(name, tmp_path)


@pytest.mark.parametrize("name", ["main\u2028x", "main\x85x"])
def test_a_name_git_takes_but_yaml_reads_as_a_line_break_is_refused(name: str) -> None:
    assert branch_problem(name) == "holds a character that is not printable"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(tmp_path)], check=True)
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "refunds.md").write_text("# Refunds\n\nFive to ten days.\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "query": "refund?", "gold": ["refunds"]}) + "\n",
                                          encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("ci", [["--action-ref", REF], ["--ci", "azure", "--image", IMAGE],
                                ["--ci", "gitlab", "--image", IMAGE]], ids=["github", "azure", "gitlab"])
def test_init_with_a_branch_git_refuses_is_exit_2_and_writes_nothing(repo: Path, capsys, ci: list[str]) -> None:
    before = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git/" not in p.as_posix())
    code, out, err = run_cli([*INIT, "--branch", HOSTILE, *ci], capsys)
    assert code == 2, out + err
    assert "--branch" in err and "is not a branch name git takes" in err and "Traceback" not in err
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git/" not in p.as_posix()) == before


@pytest.mark.parametrize("name", ['main"]', "it's", "a#b{x}"])
def test_a_branch_git_takes_reads_back_from_every_pipeline_as_itself(repo: Path, capsys, name: str) -> None:
    code, out, err = run_cli([*INIT, "--branch", name, "--action-ref", REF], capsys)
    assert code == 0, out + err
    caller = yaml.safe_load((repo / ".github/workflows/retrieval.yml").read_text(encoding="utf-8"))
    assert caller[True]["push"] == {"branches": [name]}
    code, out, err = run_cli([*INIT, "--branch", name, "--ci", "azure", "--image", IMAGE], capsys)
    assert code == 0, out + err
    azure = yaml.safe_load((repo / "azure-pipelines.yml").read_text(encoding="utf-8"))
    assert azure["trigger"] == {"branches": {"include": [name]}}
    refresh = next(job for job in azure["jobs"] if job["job"] == "refresh")
    assert "'refs/heads/" + name.replace("'", "''") + "'" in refresh["condition"]  # an expression's literal
