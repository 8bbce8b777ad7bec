"""The GitLab ``pages`` job text (``forge/gitlab/ci.py``): valid YAML beside the ``retrieval``
job ``init --ci gitlab`` writes, the whole history, after the refresh, ``public/`` published."""

from __future__ import annotations

import yaml

from retrieval_gate.forge.gitlab.ci import gitlab_ci, gitlab_pages_job

IMAGE = "ghcr.io/acme/retrieval-gate@sha256:" + "a" * 64


def test_the_pages_job_builds_the_site_from_the_whole_history_after_the_refresh() -> None:
    text = gitlab_ci(image=IMAGE, suite="default", kb="kb", kb_is_file=False) + gitlab_pages_job(image=IMAGE)
    jobs = yaml.safe_load(text)
    pages = jobs["pages"]
    assert pages["needs"] == ["retrieval-refresh"] and pages["image"] == {"name": IMAGE, "entrypoint": [""]}
    assert pages["variables"] == {"GIT_DEPTH": "0"}  # a shallow clone would be exit 2
    assert pages["script"][-1] == 'retrieval-gate history --all --config "retrieval-gate.yml" --out public'
    assert pages["artifacts"]["paths"] == ["public"]
    assert pages["rules"] == [{"if": '$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"'}]
    # the refresh's own rule on the default branch is the same: pages runs in every pipeline that refreshes
    assert jobs["retrieval-refresh"]["rules"] == pages["rules"]


def test_a_config_path_is_quoted() -> None:
    job = yaml.safe_load(gitlab_pages_job(image=IMAGE, config="ci/my config.yml"))["pages"]
    assert job["script"][-1] == 'retrieval-gate history --all --config "ci/my config.yml" --out public'
