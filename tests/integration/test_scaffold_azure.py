"""The Azure pipeline ``init --ci azure`` writes, and ``init --ci azure`` end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from retrieval_gate.forge.azure.ci import azure_ci
from tests.integration.test_init_cli import cli, repo  # noqa: F401  (the fixture)

IMAGE = "ghcr.io/acme/retrieval-gate:0.2.0@sha256:" + "a" * 64


def _jobs(text: str) -> dict[str, dict]:
    return {job["job"]: job for job in yaml.safe_load(text)["jobs"]}


def test_the_pr_job_posts_with_the_access_token_and_publishes_junit_to_the_tests_tab() -> None:
    jobs = _jobs(azure_ci(image=IMAGE, suite="default", branch="main"))
    retrieval = jobs["retrieval"]
    assert retrieval["container"] == IMAGE
    run = next(s for s in retrieval["steps"] if s.get("script") == "retrieval-gate action")
    assert run["env"]["SYSTEM_ACCESSTOKEN"] == "$(System.AccessToken)"
    assert "RETRIEVAL_GATE_AZURE_WRITE_TOKEN" not in run["env"]
    assert run["env"]["${{ if ne(variables['Build.Reason'], 'PullRequest') }}"] == {"INPUT_MODE": "report"}
    publish = next(s for s in retrieval["steps"] if s.get("task") == "PublishTestResults@2")
    assert publish["condition"] == "always()"
    assert publish["inputs"]["testResultsFormat"] == "JUnit"
    assert publish["inputs"]["testResultsFiles"] == "retrieval-gate-out/junit.xml"


def test_the_refresh_runs_no_evaluation_and_alone_holds_the_write_token() -> None:
    jobs = _jobs(azure_ci(image=IMAGE, suite="default", branch="main"))
    refresh = jobs["refresh"]
    assert refresh["dependsOn"] == "retrieval" and refresh["variables"] == [{"group": "retrieval-gate-write"}]
    assert "eq(variables['Build.SourceBranch'], 'refs/heads/main')" in refresh["condition"]
    run = next(s for s in refresh["steps"] if s.get("script") == "retrieval-gate action")
    assert run["env"]["INPUT_MODE"] == "write-baseline"
    assert run["env"]["INPUT_RESULTS_FILE"] == "retrieval-gate-in/results.json"
    assert "SYSTEM_ACCESSTOKEN" not in run["env"]


def test_hostile_branch_and_suite_names_stay_one_value() -> None:
    suite = 'x"\n          INPUT_MODE: write-baseline'
    jobs = _jobs(azure_ci(image=IMAGE, suite=suite, branch="it's #main"))
    run = next(s for s in jobs["retrieval"]["steps"] if s.get("script") == "retrieval-gate action")
    assert run["env"]["INPUT_SUITE"] == suite and "INPUT_MODE" not in run["env"]
    assert "'refs/heads/it''s #main'" in jobs["refresh"]["condition"]


def test_init_ci_azure_writes_the_pipeline_and_no_github_workflow(repo: Path,  # noqa: F811
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "init", "--no-baseline", "--ci", "azure", "--image", IMAGE)
    assert code == 0, err
    jobs = _jobs((repo / "azure-pipelines.yml").read_text(encoding="utf-8"))
    assert set(jobs) == {"retrieval", "refresh"} and jobs["retrieval"]["container"] == IMAGE
    assert yaml.safe_load((repo / "azure-pipelines.yml").read_text(encoding="utf-8"))["trigger"] == {
        "branches": {"include": ["trunk"]}}  # the checked-out branch
    assert not (repo / ".github").exists() and not (repo / ".gitlab-ci.yml").exists()
    assert "git add retrieval-gate.yml azure-pipelines.yml .gitignore" in out
    code, _, err = cli(capsys, "init", "--no-baseline", "--ci", "azure")
    assert code == 0 and "azure pipeline: not written" in err
    code, _, err = cli(capsys, "init", "--no-baseline", "--ci", "azure", "--image", "rg@sha256:" + "a" * 64)
    assert code == 2 and "RepoDigests" in err


def test_docs_ci_shows_the_pipeline_init_writes() -> None:
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "ci.md").read_text(encoding="utf-8")
    shown = next(yaml.safe_load(block) for block in re.findall(r"^```yaml\n(.*?)^```", doc, re.M | re.S)
                 if "PublishTestResults@2" in block and "refresh" in block)
    image = _jobs_of(shown)["retrieval"]["container"]
    assert shown == yaml.safe_load(azure_ci(image=image, suite="default", branch="main"))


def _jobs_of(pipeline: dict) -> dict[str, dict]:
    return {job["job"]: job for job in pipeline["jobs"]}
