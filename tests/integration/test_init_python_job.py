"""``init`` with a retriever that needs the team's own code or packages writes the Python-job
workflow (the wheel in their own job, installing their requirements) instead of the Docker
action's two, says why, and needs no action pin; through the CLI on a small repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from retrieval_gate import __version__
from tests.helpers import run_cli

CARDS = {"refunds": "# Refunds\n\nA card refund shows up on the statement in 5 to 10 business days.\n",
         "password": "# Reset your password\n\nClick 'forgot password' on the login page.\n",
         "export": "# Export reports\n\nExport any report to CSV or PDF from the Reports page.\n"}
CASES = [{"id": "c1", "query": "When does a card refund appear?", "gold": ["refunds"]},
         {"id": "c2", "query": "I forgot my password", "gold": ["password"]},
         {"id": "c3", "query": "Export a report as CSV", "gold": ["export"]}]
GLUE = "def search(query, limit):\n    return ['refunds', 'password', 'export'][:limit]\n"
CALLER = ".github/workflows/retrieval.yml"
COMMENT = ".github/workflows/retrieval-comment.yml"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(tmp_path)], check=True)
    (tmp_path / "kb").mkdir()
    for name, text in CARDS.items():
        (tmp_path / "kb" / f"{name}.md").write_text(text, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "app" / "rag.py").write_text(GLUE, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("langchain-core\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _install_runs(workflow: dict) -> dict[str, str]:
    return {name: step["run"] for name, job in workflow["jobs"].items() for step in job["steps"]
            if step.get("name", "").startswith("Install")}


def test_a_python_retriever_gets_the_python_job_and_the_first_baseline(repo, capsys):
    code, out, err = run_cli(["init", "--retriever", "python:app.rag:search"], capsys)  # no --action-ref needed
    assert code == 0, err
    config = yaml.safe_load((repo / "retrieval-gate.yml").read_text(encoding="utf-8"))
    assert config["suites"]["default"]["retriever"] == "python:app.rag:search"
    workflow = yaml.safe_load((repo / CALLER).read_text(encoding="utf-8"))
    assert set(workflow["jobs"]) == {"compare", "baseline-eval", "baseline"}
    assert workflow[True]["push"] == {"branches": ["trunk"]}
    installs = _install_runs(workflow)
    assert f"python -m pip install retrieval-gate=={__version__} -r requirements.txt" in installs["compare"]
    assert "requirements" not in installs["baseline"]  # the job that writes the baseline runs none of their code
    assert not (repo / COMMENT).exists()
    assert "the wheel in your own Python job, not the Docker action: retriever python:app.rag:search imports your " \
           "own module" in out
    assert "examples/workflows/python-job.yml" in out and "workflows: not written" not in err
    # the first baseline measured their retriever: 3 of 3 cases hit at rank ≤ 3 (by hand: the fixed list)
    baseline = json.loads((repo / "baselines" / "default.json").read_text(encoding="utf-8"))
    assert baseline["aggregates"]["overall"]["hit@3"]["value"] == 1.0
    assert baseline["aggregates"]["overall"]["hit@1"]["value"] == pytest.approx(1 / 3, abs=1e-6)


def test_a_framework_retriever_named_in_the_config_is_recognised_by_its_prefix(repo, capsys):
    (repo / "requirements.txt").unlink()
    (repo / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    kb: kb\n    cases: cases.jsonl\n    retriever: llamaindex:app.index:index\n"
        "    options: {id_key: card_id}\n", encoding="utf-8")
    code, out, err = run_cli(["init", "--no-baseline", "--kb", "kb", "--cases", "cases.jsonl"], capsys)
    assert code == 0, err
    assert "kept retrieval-gate.yml" in out
    assert "retriever llamaindex:app.index:index imports your LlamaIndex app" in out
    assert "no requirements.txt here" in out
    assert set(yaml.safe_load((repo / CALLER).read_text(encoding="utf-8"))["jobs"]) == {
        "compare", "baseline-eval", "baseline"}


def test_a_dense_suite_keeps_the_docker_action(repo, capsys):
    code, out, err = run_cli(["init", "--no-baseline", "--action-ref", f"acme/retrieval-gate@{'cd' * 20}"], capsys)
    assert code == 0, err
    assert "uses: acme/retrieval-gate/.github/workflows/gate.yml@" in (repo / CALLER).read_text(encoding="utf-8")
    assert (repo / COMMENT).is_file() and "Python job" not in out


def test_a_retriever_flag_against_a_kept_config_is_exit_2_and_writes_nothing(repo, capsys):
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    retriever: bm25\n", encoding="utf-8")
    code, _, err = run_cli(["init", "--no-baseline", "--kb", "kb", "--cases", "cases.jsonl",
                            "--retriever", "python:app.rag:search"], capsys)
    assert code == 2
    assert "--retriever 'python:app.rag:search'" in err and "measures 'bm25'" in err and "--force" in err
    assert not (repo / ".github").exists()


def test_a_rerun_after_a_first_baseline_refused_commits_the_config_and_the_workflow_too(repo, capsys):
    # the glue first returns file paths (no card ids): init writes the config and the workflow, then the
    # first baseline is refused (exit 2); fixed, the rerun keeps both files ("unchanged") and writes the
    # baseline — its commit line must name them as well, git has neither yet
    (repo / "app" / "rag.py").write_text("def search(query, limit):\n    return ['kb/refunds.md'][:limit]\n",
                                         encoding="utf-8")
    for name in ("app.rag", "app"):  # this repository's module, not one an earlier test imported
        sys.modules.pop(name, None)
    code, _, err = run_cli(["init", "--retriever", "python:app.rag:search"], capsys)
    assert code == 2 and "not cards of the KB" in err
    assert (repo / "retrieval-gate.yml").is_file() and (repo / CALLER).is_file()
    (repo / "app" / "rag.py").write_text(GLUE, encoding="utf-8")
    for name in ("app.rag", "app"):  # the module as edited, not the one the first run imported
        sys.modules.pop(name, None)
    code, out, err = run_cli(["init", "--retriever", "python:app.rag:search"], capsys)
    assert code == 0, err
    add = next(line.strip() for line in out.splitlines() if line.strip().startswith("git add "))
    assert set(add.split()[2:]) >= {"retrieval-gate.yml", CALLER, "baselines/default.json", "cases.jsonl", "kb"}


def test_an_action_ref_of_another_commit_installs_retrieval_gate_from_that_commit(repo, capsys):
    # a build from a clone or a git URL (no release on PyPI): retrieval-gate==X.Y.Z would not resolve;
    # --action-ref names the commit, so the jobs install the package from it, as the README's install does
    sha = "0123456789abcdef0123456789abcdef01234567"
    code, out, err = run_cli(["init", "--no-baseline", "--retriever", "python:app.rag:search",
                              "--action-ref", f"acme/retrieval-gate@{sha}"], capsys)
    assert code == 0, err
    installs = _install_runs(yaml.safe_load((repo / CALLER).read_text(encoding="utf-8")))
    package = f'"retrieval-gate @ git+https://github.com/acme/retrieval-gate@{sha}"'
    assert f"python -m pip install {package} -r requirements.txt" in installs["compare"]
    assert f"python -m pip install {package} -r requirements.txt" in installs["baseline-eval"]
    assert installs["baseline"].rstrip().endswith(f"python -m pip install {package}")
    assert f"retrieval-gate=={__version__}" not in (repo / CALLER).read_text(encoding="utf-8")
    assert f"It installs retrieval-gate @ git+https://github.com/acme/retrieval-gate@{sha} and" in out
