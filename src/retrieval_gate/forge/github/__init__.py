"""GitHub (Actions, the REST API through PyGithub): docs/action.md."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from retrieval_gate.forge.base import Forge, ForgeApi, ForgeSettings, Limits, Words
from retrieval_gate.forge.github import settings as github_settings


class GitHub(Forge):
    name = "github"
    title = "GitHub"
    words = Words(change="pull request", comment="comment", sigil="#", summary="the job summary",
                  fork="a pull request from a fork gets a read-only token", run_link="workflow run",
                  no_comment="the comment is in the job summary and in {file} (output comment_file); the "
                             "workflow_run pattern in docs/action.md posts it")
    # 65,536 characters in one issue / PR comment; a job summary "supports content up to a size of 1024k"
    limits = Limits(comment_chars=65_536, comment_aim=65_000, summary_bytes=1024 * 1024)
    workflow_commands = True
    settings_module = github_settings
    secret_variables = github_settings.SECRET_VARIABLES
    token_variables = (github_settings.TOKEN_VARIABLE,)
    variable_prefixes = ("GITHUB_", "INPUT_", "RUNNER_", "ACTIONS_")
    action_inputs = (github_settings.TOKEN_INPUT,)
    secret_prefixes = github_settings.SECRET_PREFIXES

    def detect(self, env: Mapping[str, str]) -> bool:
        return True  # the default: GitHub Actions, or a local run of the action's entry point

    def api(self, settings: ForgeSettings, *, scrub: Callable[[str], str], log: Callable[[str], None]) -> ForgeApi:
        from retrieval_gate.forge.github import api  # PyGithub, requests: kept from start-up

        return api.GitHubRepo(token=settings.comment_token, repository=settings.repository, api_url=settings.api_url,
                              scrub=scrub, log=log, seconds_between_writes=api.SECONDS_BETWEEN_WRITES)

    def pull_page(self, *, host: str, path: str) -> str | None:
        return f"https://{host}/{path}/pull/{{n}}" if "github" in host.split(".") or host.startswith("github") else None

    def blob_url(self, settings: ForgeSettings, *, ref: str, path: str) -> str:
        return f"{settings.server_url.rstrip('/')}/{settings.repository}/blob/{ref}/{path}"

    def outside_note(self, env: Mapping[str, str]) -> str | None:
        if env.get("GITHUB_ACTIONS") == "true":
            return None
        return "not on GitHub Actions (GITHUB_ACTIONS is not 'true')"
