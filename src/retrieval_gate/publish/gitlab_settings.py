"""A GitLab pipeline's environment read as the action reads a GitHub runner's: one code path.

GitLab's predefined variables are translated (pure, :func:`github_shaped`) into the variables and
event payload the action's settings already read, so ``retrieval-gate action`` runs the same flows
in a GitLab job (``GITLAB_CI=true``):

====================================  =============================================================
``CI_PIPELINE_SOURCE``                event
====================================  =============================================================
``merge_request_event``               ``pull_request``: judged by the baseline, manifest and gate
                                      settings read at ``CI_MERGE_REQUEST_DIFF_BASE_SHA`` through
                                      the API; one note on merge request ``CI_MERGE_REQUEST_IID``
``push``                              ``push``: on ``CI_DEFAULT_BRANCH`` the baseline refresh (one
                                      commit through the API), elsewhere a report
``web``, ``api``, ``trigger``         ``workflow_dispatch`` (a manual run: the ``mode`` input
                                      decides, as on GitHub)
anything else (``schedule``, …)       that name: a report
====================================  =============================================================

The token comes from the masked variable ``RETRIEVAL_GATE_GITLAB_TOKEN`` (a project access token
with the ``api`` scope; ``CI_JOB_TOKEN`` cannot post notes or commit). The inputs are the GitHub
action's, as job variables (``INPUT_SUITE``, ``INPUT_FAIL_ON_REGRESSION``, …). Every value the job
holds that is a secret (the token, ``CI_JOB_TOKEN``, the registry and dependency-proxy passwords)
is scrubbed from what the run prints or writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

TOKEN_VARIABLE = "RETRIEVAL_GATE_GITLAB_TOKEN"
# GitLab's predefined variables that hold secrets: scrubbed like the runner's ACTIONS_* values.
SECRET_VARIABLES = ("CI_JOB_TOKEN", "CI_REGISTRY_PASSWORD", "CI_DEPENDENCY_PROXY_PASSWORD", "CI_DEPLOY_PASSWORD",
                    "CI_JOB_JWT", "CI_JOB_JWT_V2")
_DISPATCH_SOURCES = ("web", "api", "trigger")


def on_gitlab(env: Mapping[str, str]) -> bool:
    return env.get("GITLAB_CI") == "true"


def gitlab_token(env: Mapping[str, str]) -> SecretStr:
    return SecretStr((env.get(TOKEN_VARIABLE) or "").strip())


def event_name(source: str) -> str:
    if source == "merge_request_event":
        return "pull_request"
    if source in _DISPATCH_SOURCES:
        return "workflow_dispatch"
    return source


def _iid(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() and len(text) <= 12 else None


def github_shaped(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
    """GitLab's variables → (the environment the action's settings read, the event payload).
    ``INPUT_*`` and everything else pass through unchanged; no ``GITHUB_OUTPUT`` or
    ``GITHUB_STEP_SUMMARY`` (GitLab has neither: the files under ``out_dir`` are the artifacts)."""
    source = env.get("CI_PIPELINE_SOURCE", "")
    name = event_name(source)
    target = env.get("CI_MERGE_REQUEST_PROJECT_PATH") or env.get("CI_PROJECT_PATH", "")
    branch = env.get("CI_COMMIT_BRANCH") or ""
    iid = _iid(env.get("CI_MERGE_REQUEST_IID"))
    out = {key: value for key, value in env.items()
           if not key.startswith(("GITHUB_", "ACTIONS_")) and key not in SECRET_VARIABLES}
    out.update({
        "GITHUB_EVENT_NAME": name,
        "GITHUB_REPOSITORY": target,
        "GITHUB_SHA": env.get("CI_COMMIT_SHA", ""),
        "GITHUB_REF": f"refs/heads/{branch}" if branch else (f"refs/merge-requests/{iid}/head" if iid else ""),
        "GITHUB_API_URL": env.get("CI_API_V4_URL", ""),
        "GITHUB_SERVER_URL": env.get("CI_SERVER_URL", ""),
        "GITHUB_RUN_ID": env.get("CI_PIPELINE_ID", ""),
        "GITHUB_WORKSPACE": env.get("CI_PROJECT_DIR", "") or env.get("PWD", "."),
    })
    for key in SECRET_VARIABLES:  # scrubbed as the runner's ACTIONS_* values are
        if env.get(key):
            out[f"ACTIONS_GITLAB_{key}"] = env[key]
    event: dict[str, Any] = {"repository": {"default_branch": env.get("CI_DEFAULT_BRANCH") or None}}
    if name == "pull_request" and iid is not None:
        event["pull_request"] = {
            "number": iid,
            "base": {"sha": env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None},
            "head": {"repo": {"full_name": env.get("CI_MERGE_REQUEST_SOURCE_PROJECT_PATH") or target}},
        }
    return out, event


def pipeline_url(env: Mapping[str, str]) -> str | None:
    return env.get("CI_PIPELINE_URL") or None
