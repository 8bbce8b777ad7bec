"""A GitLab job's environment, read once (``GITLAB_CI=true``): GitLab's own predefined variables
and the two tokens (docs/ci.md, "GitLab").

====================================  =============================================================
``CI_PIPELINE_SOURCE``                what the run is (the modes' vocabulary, ``publish/modes.py``)
====================================  =============================================================
``merge_request_event``               ``pull_request``: judged by the baseline, manifest and gate
                                      settings read at the merge request's base commit — taken
                                      from its ``diff_refs`` through the API, and a
                                      ``CI_MERGE_REQUEST_DIFF_BASE_SHA`` that disagrees is refused
``push``                              ``push``: on ``CI_DEFAULT_BRANCH`` the refresh job (mode
                                      ``write-baseline``: no evaluation), elsewhere a report
``web``, ``api``, ``trigger``         ``workflow_dispatch`` (a manual run: the ``mode`` input decides)
anything else (``schedule``, …)       that name: a report
====================================  =============================================================

Tokens: ``RETRIEVAL_GATE_GITLAB_TOKEN`` posts the merge-request note (a project access token with
the Reporter role and the ``api`` scope: it can write notes, not push) — absent in a fork's
merge request, or withheld when it is protected and the source branch is not, and then the note is
only in the artifacts. ``RETRIEVAL_GATE_GITLAB_WRITE_TOKEN`` commits the refresh: a protected
variable scoped to the environment only the refresh job declares, which runs no evaluation (a
process holding it refuses to evaluate). ``CI_JOB_TOKEN`` is never used. Every secret the job
holds (both tokens, ``CI_JOB_TOKEN``, the registry and dependency-proxy passwords) is scrubbed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr

from retrieval_gate.forge.base import ForgeSettings, Tokens, http_url, small_int

NOTE_TOKEN_VARIABLE = "RETRIEVAL_GATE_GITLAB_TOKEN"
WRITE_TOKEN_VARIABLE = "RETRIEVAL_GATE_GITLAB_WRITE_TOKEN"
SECRET_VARIABLES = ("CI_JOB_TOKEN", "CI_REGISTRY_PASSWORD", "CI_DEPENDENCY_PROXY_PASSWORD", "CI_DEPLOY_PASSWORD",
                    "CI_JOB_JWT", "CI_JOB_JWT_V2")
_DISPATCH_SOURCES = ("web", "api", "trigger")


def read_tokens(env: Mapping[str, str]) -> Tokens:
    return Tokens(comment=SecretStr((env.get(NOTE_TOKEN_VARIABLE) or "").strip()),
                  write=SecretStr((env.get(WRITE_TOKEN_VARIABLE) or "").strip()),
                  write_variable=WRITE_TOKEN_VARIABLE)


def secret_values(env: Mapping[str, str], *, tokens: Tokens) -> list[str]:
    return [tokens.comment.get_secret_value(), tokens.write.get_secret_value(),
            *(env[key].strip() for key in SECRET_VARIABLES if env.get(key))]


def workspace(env: Mapping[str, str]) -> Path:
    return Path(env.get("CI_PROJECT_DIR") or env.get("PWD") or ".")


def event_name(source: str) -> str:
    if source == "merge_request_event":
        return "pull_request"
    if source in _DISPATCH_SOURCES:
        return "workflow_dispatch"
    return source


def read_settings(env: Mapping[str, str], *, tokens: Tokens) -> ForgeSettings:
    name = event_name(env.get("CI_PIPELINE_SOURCE", ""))
    target = env.get("CI_MERGE_REQUEST_PROJECT_PATH") or env.get("CI_PROJECT_PATH", "")
    branch = env.get("CI_COMMIT_BRANCH") or None
    iid = small_int(env.get("CI_MERGE_REQUEST_IID")) if name == "pull_request" else None
    source_project = env.get("CI_MERGE_REQUEST_SOURCE_PROJECT_PATH") or target
    return ForgeSettings(
        forge="gitlab",
        event_name=name,
        repository=target,
        api_url=http_url("CI_API_V4_URL", value=env.get("CI_API_V4_URL") or "https://gitlab.com/api/v4"),
        server_url=http_url("CI_SERVER_URL", value=env.get("CI_SERVER_URL") or "https://gitlab.com"),
        sha=env.get("CI_COMMIT_SHA", ""),
        commit_message=env.get("CI_COMMIT_MESSAGE", "")[:4096],
        ref=f"refs/heads/{branch}" if branch else (f"refs/merge-requests/{iid}/head" if iid else ""),
        branch=branch,
        run_url=env.get("CI_PIPELINE_URL") or None,
        default_branch=env.get("CI_DEFAULT_BRANCH") or None,
        pr_number=iid,
        base_sha=env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None,
        verify_base=True,  # a variable the merge request's own .gitlab-ci.yml can set
        is_fork=iid is not None and source_project != target,
        workspace=workspace(env),
        tokens=(tokens.comment, tokens.write),
        write_variable=tokens.write_variable,
    )
