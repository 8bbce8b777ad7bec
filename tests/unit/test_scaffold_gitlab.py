"""The GitLab pipeline ``init --ci gitlab`` writes (pure; GitLab's variables read as settings:
tests/unit/test_forge.py)."""

from __future__ import annotations

import pytest
import yaml

from retrieval_gate.forge.gitlab.ci import gitlab_ci
from retrieval_gate.scaffold.texts import valid_image

IMAGE = "ghcr.io/acme/retrieval-gate:0.2.0@sha256:" + "a" * 64


def test_the_job_runs_the_action_in_the_pinned_image_with_the_junit_report() -> None:
    job = yaml.safe_load(gitlab_ci(image=IMAGE, suite="default", kb="kb.jsonl", kb_is_file=True))["retrieval"]
    assert job["image"]["name"] == IMAGE
    assert job["script"] == ["retrieval-gate action"]
    assert job["artifacts"]["reports"]["junit"] == "retrieval-gate-out/junit.xml"
    assert job["artifacts"]["when"] == "always"
    assert job["cache"]["key"]["files"] == ["kb.jsonl"]  # not the config: a gate-only edit keeps the store warm
    assert job["cache"]["paths"] == [".retrieval-gate/"]
    rules = [r["if"] for r in job["rules"]]
    assert rules == ['$CI_PIPELINE_SOURCE == "merge_request_event"',
                     '$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"']
    assert job["rules"][1]["variables"] == {"INPUT_MODE": "report"}  # on main it evaluates and writes nothing
    assert "INPUT_SUITE" not in job["variables"] and "environment" not in job


def test_the_refresh_is_a_job_of_its_own_that_runs_no_evaluation_in_the_write_tokens_environment() -> None:
    jobs = yaml.safe_load(gitlab_ci(image=IMAGE, suite="default", kb="kb", kb_is_file=False))
    refresh = jobs["retrieval-refresh"]
    assert refresh["environment"]["name"] == "retrieval-gate-baseline"  # the write token's scope
    assert refresh["variables"]["INPUT_MODE"] == "write-baseline"
    assert refresh["variables"]["INPUT_RESULTS_FILE"] == "retrieval-gate-out/results.json"
    assert refresh["needs"] == [{"job": "retrieval", "artifacts": True}]
    assert [r["if"] for r in refresh["rules"]] == [
        '$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"']
    assert jobs["retrieval"]["cache"]["key"] == "retrieval-gate-store"


def test_a_hostile_suite_name_stays_one_quoted_value() -> None:
    suite = 'x"\n      mode: write-baseline'
    jobs = yaml.safe_load(gitlab_ci(image=IMAGE, suite=suite, kb="kb", kb_is_file=False))
    assert set(jobs) == {"retrieval", "retrieval-refresh"}
    for job in jobs.values():
        assert job["variables"]["INPUT_SUITE"] == suite
    assert set(jobs["retrieval"]) == {"image", "variables", "script", "cache", "artifacts", "rules"}


@pytest.mark.parametrize(("image", "ok"), [
    (IMAGE, True), ("acme/retrieval-gate@sha256:" + "b" * 64, True),  # Docker Hub's RepoDigests form
    ("ghcr.io/acme/retrieval-gate:0.2.0", False), ("ghcr.io/acme/rg@sha256:" + "a" * 63, False), ("", False),
    ("retrieval-gate@sha256:" + "c" * 64, False), ("retrieval-gate:dev@sha256:" + "c" * 64, False),  # a local build
    ("sha256:" + "c" * 64, False)])  # an image id
def test_only_an_image_pinned_by_digest_is_accepted(image: str, ok: bool) -> None:
    assert valid_image(image) is ok

