"""GitHub Actions' environment, read once: ``GITHUB_*``, the ``github_token`` input, the event
payload (a file the runner writes: ``forge.event.read_event``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr

from retrieval_gate.forge.base import ForgeSettings, Tokens, http_url
from retrieval_gate.forge.event import payload_object, read_event

TOKEN_INPUT = "github_token"  # action.yml's input (INPUT_GITHUB_TOKEN reaches the Docker action)
TOKEN_VARIABLE = "INPUT_GITHUB_TOKEN"
# The token as the workflow passes it (``${{ secrets.GITHUB_TOKEN }}`` is often mapped to the name)
# and as the Docker action receives it; ``ACTIONS_*``: the runtime token, the OIDC request token, …
SECRET_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN", "INPUT_GITHUB_TOKEN")
SECRET_PREFIXES = ("ACTIONS_",)


def read_tokens(env: Mapping[str, str]) -> Tokens:
    """The ``github_token`` input (empty when not set): one token, whose reach the workflow's
    ``permissions:`` set (docs/action.md: the job that writes runs no evaluation)."""
    token = SecretStr((env.get(TOKEN_VARIABLE) or "").strip())
    return Tokens(comment=token, write=token)


def secret_values(env: Mapping[str, str], *, tokens: Tokens) -> list[str]:
    """The token and every ``ACTIONS_*`` value (the runtime token, the OIDC request token, cache
    and results URLs)."""
    return [tokens.comment.get_secret_value(),
            *(value.strip() for key, value in sorted(env.items()) if key.startswith(SECRET_PREFIXES))]


def workspace(env: Mapping[str, str]) -> Path:
    """GITHUB_WORKSPACE (the checkout; a Docker action's working directory), else the current folder."""
    return Path(env.get("GITHUB_WORKSPACE") or ".")


def read_settings(env: Mapping[str, str], *, tokens: Tokens) -> ForgeSettings:
    event = read_event(env.get("GITHUB_EVENT_PATH"))
    repository = env.get("GITHUB_REPOSITORY", "")
    server_url = http_url("GITHUB_SERVER_URL", value=env.get("GITHUB_SERVER_URL") or "https://github.com")
    run_id = env.get("GITHUB_RUN_ID", "")
    ref = env.get("GITHUB_REF", "")
    pull = payload_object(event.get("pull_request"))
    number = pull.get("number")
    head_repo = payload_object(payload_object(pull.get("head")).get("repo")).get("full_name")
    base_sha = payload_object(pull.get("base")).get("sha")
    default_branch = payload_object(event.get("repository")).get("default_branch")
    run = payload_object(event.get("workflow_run"))
    relayed_sha = run.get("head_sha")
    relayed_repo = payload_object(run.get("head_repository")).get("full_name")
    run_number = run.get("id")  # digits only: the URL is ours, built from the id alone
    relayed_url = (f"{server_url.rstrip('/')}/{repository}/actions/runs/{run_number}"
                   if isinstance(run_number, int) and not isinstance(run_number, bool) and repository else None)
    return ForgeSettings(
        forge="github",
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        repository=repository,
        api_url=http_url("GITHUB_API_URL", value=env.get("GITHUB_API_URL") or "https://api.github.com"),
        server_url=server_url,
        sha=env.get("GITHUB_SHA", ""),
        commit_message=_message(payload_object(event.get("head_commit")).get("message")),
        ref=ref,
        branch=ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None,
        run_url=f"{server_url.rstrip('/')}/{repository}/actions/runs/{run_id}" if repository and run_id else None,
        default_branch=str(default_branch) if default_branch else None,
        pr_number=number if isinstance(number, int) and not isinstance(number, bool) else None,
        base_sha=str(base_sha) if base_sha else None,
        is_fork=bool(head_repo) and head_repo != repository,
        workspace=workspace(env),
        output_file=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
        summary_file=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None,
        relayed_head_sha=relayed_sha if isinstance(relayed_sha, str) and relayed_sha else None,
        relayed_head_repo=relayed_repo if isinstance(relayed_repo, str) and relayed_repo else None,
        relayed_run_url=relayed_url,
        tokens=(tokens.comment, tokens.write),
    )



def _message(value: object) -> str:
    return value[:4096] if isinstance(value, str) else ""
