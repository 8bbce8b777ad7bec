"""A Gitea or Forgejo Actions job's environment, read once (``GITEA_ACTIONS=true`` or
``FORGEJO_ACTIONS=true``; docs/ci.md, "Gitea and Forgejo"). The runner runs GitHub Actions-style
workflows and sets GitHub's variables too: ``GITHUB_EVENT_NAME`` (the modes' vocabulary already:
``pull_request``, ``push``, ``workflow_dispatch``, ``schedule``, …), ``GITHUB_REPOSITORY``,
``GITHUB_SHA``, ``GITHUB_REF``, ``GITHUB_SERVER_URL``, ``GITHUB_API_URL`` (``<server>/api/v1``),
``GITHUB_WORKSPACE``, ``GITHUB_OUTPUT``, ``GITHUB_RUN_ID`` and ``GITHUB_RUN_NUMBER`` (the run's page is
``<server>/<owner>/<repo>/actions/runs/<id>`` on Gitea since 1.26, ``…/runs/<number>`` on Forgejo and
on Gitea before 1.26) and the event payload at ``GITHUB_EVENT_PATH``, in
GitHub's shape (``pull_request.number``, ``.base.sha``, ``.head.repo.full_name``,
``repository.default_branch``). It shows no job summary, so none is written.

Tokens: ``RETRIEVAL_GATE_GITEA_TOKEN`` posts the pull-request comment — an access token of a bot
account with the scopes ``write:issue``, ``read:repository`` and ``read:user`` (``GET /user``: which
comments are its own) and read access to the repository: it can comment, not push (the job's own
``GITEA_TOKEN`` is never used: it can push). A pull request from a fork gets no secrets, and then
the comment is only in the artifacts.
``RETRIEVAL_GATE_GITEA_WRITE_TOKEN`` commits the refresh (``write:repository``), mapped only into the
refresh job, which runs no evaluation (a process holding it refuses to evaluate). Every secret the
job holds (both tokens, ``GITEA_TOKEN`` / ``GITHUB_TOKEN``, the ``ACTIONS_*`` runtime token) is
scrubbed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr

from retrieval_gate.forge.base import ForgeSettings, Tokens, http_url
from retrieval_gate.forge.event import payload_object, read_event

COMMENT_TOKEN_VARIABLE = "RETRIEVAL_GATE_GITEA_TOKEN"
WRITE_TOKEN_VARIABLE = "RETRIEVAL_GATE_GITEA_WRITE_TOKEN"
SECRET_VARIABLES = ("GITEA_TOKEN", "GITHUB_TOKEN", "FORGEJO_TOKEN")
SECRET_PREFIXES = ("ACTIONS_",)


def read_tokens(env: Mapping[str, str]) -> Tokens:
    return Tokens(comment=SecretStr((env.get(COMMENT_TOKEN_VARIABLE) or "").strip()),
                  write=SecretStr((env.get(WRITE_TOKEN_VARIABLE) or "").strip()),
                  write_variable=WRITE_TOKEN_VARIABLE)


def secret_values(env: Mapping[str, str], *, tokens: Tokens) -> list[str]:
    return [tokens.comment.get_secret_value(), tokens.write.get_secret_value(),
            *(env[key].strip() for key in SECRET_VARIABLES if env.get(key)),
            *(value.strip() for key, value in sorted(env.items()) if key.startswith(SECRET_PREFIXES))]


def workspace(env: Mapping[str, str]) -> Path:
    return Path(env.get("GITHUB_WORKSPACE") or ".")


def read_settings(env: Mapping[str, str], *, tokens: Tokens) -> ForgeSettings:
    event = read_event(env.get("GITHUB_EVENT_PATH"))
    repository = env.get("GITHUB_REPOSITORY", "")
    server_url = http_url("GITHUB_SERVER_URL", value=env.get("GITHUB_SERVER_URL") or "https://gitea.com").rstrip("/")
    api_url = http_url("GITHUB_API_URL", value=env.get("GITHUB_API_URL") or f"{server_url}/api/v1")
    ref = env.get("GITHUB_REF", "")
    # the run's page: by its id on Gitea (1.26 on), by its number on Forgejo, whose runner says so
    run = env.get("GITHUB_RUN_NUMBER" if env.get("FORGEJO_ACTIONS") == "true" else "GITHUB_RUN_ID", "")
    pull = payload_object(event.get("pull_request"))
    number = pull.get("number")
    head_repo = payload_object(payload_object(pull.get("head")).get("repo")).get("full_name")
    base_sha = payload_object(pull.get("base")).get("sha")
    default_branch = payload_object(event.get("repository")).get("default_branch")
    is_pull = isinstance(number, int) and not isinstance(number, bool)
    return ForgeSettings(
        forge="gitea",
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        repository=repository,
        api_url=api_url,
        server_url=server_url,
        sha=env.get("GITHUB_SHA", ""),
        ref=ref,
        branch=ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None,
        run_url=f"{server_url}/{repository}/actions/runs/{run}" if repository and run.isdigit() else None,
        default_branch=str(default_branch) if default_branch else None,
        pr_number=number if is_pull else None,
        base_sha=str(base_sha) if base_sha else None,
        is_fork=bool(head_repo) and head_repo != repository,
        workspace=workspace(env),
        output_file=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
        tokens=(tokens.comment, tokens.write),
        write_variable=tokens.write_variable,
    )

