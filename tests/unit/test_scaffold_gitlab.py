"""The GitLab pipeline ``init --ci gitlab`` writes, and GitLab's variables read as the action's
settings (both pure)."""

from __future__ import annotations

import pytest
import yaml

from retrieval_gate.publish.gitlab_settings import github_shaped
from retrieval_gate.scaffold.gitlab_ci import gitlab_ci, valid_image

IMAGE = "ghcr.io/acme/retrieval-gate:0.2.0@sha256:" + "a" * 64


def test_the_job_runs_the_action_in_the_pinned_image_with_the_junit_report() -> None:
    job = yaml.safe_load(gitlab_ci(image=IMAGE, suite="default", kb="kb.jsonl", kb_is_file=True))["retrieval"]
    assert job["image"]["name"] == IMAGE
    assert job["script"] == ["retrieval-gate action"]
    assert job["artifacts"]["reports"]["junit"] == "retrieval-gate-out/junit.xml"
    assert job["artifacts"]["when"] == "always"
    assert job["cache"]["key"]["files"] == ["retrieval-gate.yml", "kb.jsonl"]
    assert job["cache"]["paths"] == [".retrieval-gate/"]
    rules = [r["if"] for r in job["rules"]]
    assert rules == ['$CI_PIPELINE_SOURCE == "merge_request_event"',
                     '$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"']
    assert "INPUT_SUITE" not in job["variables"]


def test_a_hostile_suite_name_stays_one_quoted_value() -> None:
    suite = 'x"\n      mode: write-baseline'
    job = yaml.safe_load(gitlab_ci(image=IMAGE, suite=suite, kb="kb", kb_is_file=False))["retrieval"]
    assert job["variables"]["INPUT_SUITE"] == suite
    assert set(job) == {"image", "variables", "script", "cache", "artifacts", "rules"}


@pytest.mark.parametrize(("image", "ok"), [(IMAGE, True), ("ghcr.io/acme/retrieval-gate:0.2.0", False),
                                           ("ghcr.io/acme/rg@sha256:" + "a" * 63, False), ("", False)])
def test_only_an_image_pinned_by_digest_is_accepted(image: str, ok: bool) -> None:
    assert valid_image(image) is ok


def _mr_env(**extra: str) -> dict[str, str]:
    return {"GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_IID": "42",
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": "b" * 40, "CI_PROJECT_PATH": "someone/rag",
            "CI_MERGE_REQUEST_PROJECT_PATH": "acme/rag", "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "someone/rag",
            "CI_DEFAULT_BRANCH": "main", "CI_COMMIT_SHA": "c" * 40, "CI_API_V4_URL": "https://gl.example/api/v4",
            "CI_PROJECT_DIR": "/builds/acme/rag", "CI_JOB_TOKEN": "job-token-secret", "GITHUB_TOKEN": "stale",
            **extra}


def test_a_merge_request_pipeline_reads_as_a_pull_request_against_the_target_project() -> None:
    env, event = github_shaped(_mr_env())
    assert env["GITHUB_EVENT_NAME"] == "pull_request"
    assert env["GITHUB_REPOSITORY"] == "acme/rag"  # the target project: its base judges
    assert env["GITHUB_WORKSPACE"] == "/builds/acme/rag"
    assert event["pull_request"] == {"number": 42, "base": {"sha": "b" * 40},
                                     "head": {"repo": {"full_name": "someone/rag"}}}
    assert event["repository"]["default_branch"] == "main"
    assert env["ACTIONS_GITLAB_CI_JOB_TOKEN"] == "job-token-secret"  # scrubbed like ACTIONS_* values
    assert "CI_JOB_TOKEN" not in env and "GITHUB_TOKEN" not in env


@pytest.mark.parametrize(("source", "event"), [("push", "push"), ("web", "workflow_dispatch"),
                                               ("api", "workflow_dispatch"), ("schedule", "schedule")])
def test_other_pipeline_sources(source: str, event: str) -> None:
    env, payload = github_shaped(_mr_env(CI_PIPELINE_SOURCE=source, CI_COMMIT_BRANCH="main"))
    assert env["GITHUB_EVENT_NAME"] == event
    assert env["GITHUB_REF"] == "refs/heads/main"
    assert "pull_request" not in payload


def test_a_merge_request_iid_that_is_not_a_number_is_no_pull_request() -> None:
    _, event = github_shaped(_mr_env(CI_MERGE_REQUEST_IID="1" * 5000))
    assert "pull_request" not in event
