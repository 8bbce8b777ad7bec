"""An Azure Pipelines job's environment, read once (``TF_BUILD=True``): the predefined variables
the agent exports (``Build.Reason`` → ``BUILD_REASON``, …) and the two tokens (docs/ci.md,
"Azure DevOps").

=====================================  ============================================================
``BUILD_REASON``                       what the run is (the modes' vocabulary, ``publish/modes.py``)
=====================================  ============================================================
``PullRequest``                        ``pull_request``: pull request
                                       ``SYSTEM_PULLREQUEST_PULLREQUESTID``, judged by the files at
                                       its target commit (``lastMergeTargetCommit``, through the API)
``IndividualCI``, ``BatchedCI``        ``push``: on the default branch the refresh job (mode
                                       ``write-baseline``: no evaluation), elsewhere a report
``Manual``                             ``workflow_dispatch`` (the ``mode`` input decides)
anything else (``Schedule``, …)        that name, lower-cased: a report
=====================================  ============================================================

Tokens: ``SYSTEM_ACCESSTOKEN`` (``$(System.AccessToken)``, mapped into the step's ``env:`` by the
pipeline: the agent exports it only then) posts the pull-request thread — the build service's
identity needs *Contribute to pull requests* and nothing that pushes. ``RETRIEVAL_GATE_AZURE_WRITE_TOKEN``
(a secret in a variable group whose *Branch control* check admits only the default branch, mapped
only into the refresh job) pushes the refresh; a process holding it refuses to evaluate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from pydantic import SecretStr

from retrieval_gate.forge.base import ForgeSettings, Tokens, http_url, small_int

COMMENT_TOKEN_VARIABLE = "SYSTEM_ACCESSTOKEN"
WRITE_TOKEN_VARIABLE = "RETRIEVAL_GATE_AZURE_WRITE_TOKEN"
_EVENTS = {"PullRequest": "pull_request", "IndividualCI": "push", "BatchedCI": "push", "Manual": "workflow_dispatch"}


def read_tokens(env: Mapping[str, str]) -> Tokens:
    return Tokens(comment=SecretStr((env.get(COMMENT_TOKEN_VARIABLE) or "").strip()),
                  write=SecretStr((env.get(WRITE_TOKEN_VARIABLE) or "").strip()),
                  write_variable=WRITE_TOKEN_VARIABLE)


def secret_values(env: Mapping[str, str], *, tokens: Tokens) -> list[str]:
    return [tokens.comment.get_secret_value(), tokens.write.get_secret_value()]


def workspace(env: Mapping[str, str]) -> Path:
    return Path(env.get("BUILD_SOURCESDIRECTORY") or env.get("BUILD_REPOSITORY_LOCALPATH") or ".")


def read_settings(env: Mapping[str, str], *, tokens: Tokens) -> ForgeSettings:
    reason = env.get("BUILD_REASON", "")
    name = _EVENTS.get(reason, reason.lower())
    collection = http_url("SYSTEM_COLLECTIONURI", value=env.get("SYSTEM_COLLECTIONURI") or "https://dev.azure.com/")
    project = env.get("SYSTEM_TEAMPROJECT", "")
    repo = env.get("BUILD_REPOSITORY_NAME", "")
    ref = env.get("BUILD_SOURCEBRANCH", "")
    build = env.get("BUILD_BUILDID", "")
    root = collection.rstrip("/")
    number = small_int(env.get("SYSTEM_PULLREQUEST_PULLREQUESTID")) if name == "pull_request" else None
    return ForgeSettings(
        forge="azure",
        event_name=name,
        repository=f"{project}/{repo}" if project and repo else "",
        api_url=f"{root}/{quote(project, safe='')}/_apis/git/repositories/{quote(repo, safe='')}",
        server_url=root,
        sha=env.get("BUILD_SOURCEVERSION", ""),
        commit_message=env.get("BUILD_SOURCEVERSIONMESSAGE", "")[:4096],
        ref=ref,
        branch=ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None,
        run_url=f"{root}/{quote(project, safe='')}/_build/results?buildId={build}" if project and build else None,
        pr_number=number,
        is_fork=(env.get("SYSTEM_PULLREQUEST_ISFORK") or "").lower() == "true",
        workspace=workspace(env),
        tokens=(tokens.comment, tokens.write),
        write_variable=tokens.write_variable,
    )
