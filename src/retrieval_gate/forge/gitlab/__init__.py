"""GitLab (CI/CD, the REST API v4 through python-gitlab): docs/ci.md."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from retrieval_gate.forge.base import Forge, ForgeApi, ForgeSettings, Limits, Pipeline, Words
from retrieval_gate.forge.gitlab import settings as gitlab_settings
from retrieval_gate.forge.gitlab.ci import pipeline_text


class GitLab(Forge):
    name = "gitlab"
    title = "GitLab"
    words = Words(change="merge request", comment="note", sigil="!", summary="the job's artifacts",
                  fork="a merge request from a fork runs with none of this project's variables, so no token",
                  no_comment="the note is in {file} (keep it with the job's artifacts); docs/ci.md says which "
                             "token posts it")
    limits = Limits(comment_chars=1_000_000, comment_aim=999_000)  # a note's body: at most 1,000,000 characters
    settings_module = gitlab_settings
    token_variables = (gitlab_settings.NOTE_TOKEN_VARIABLE, gitlab_settings.WRITE_TOKEN_VARIABLE)
    variable_prefixes = ("CI_", "GITLAB_", "RETRIEVAL_GATE_GITLAB")
    pipeline = Pipeline(path=".gitlab-ci.yml", text=pipeline_text)
    secret_variables = (gitlab_settings.NOTE_TOKEN_VARIABLE, gitlab_settings.WRITE_TOKEN_VARIABLE,
                        *gitlab_settings.SECRET_VARIABLES)

    def detect(self, env: Mapping[str, str]) -> bool:
        return env.get("GITLAB_CI") == "true"

    def api(self, settings: ForgeSettings, *, scrub: Callable[[str], str], log: Callable[[str], None]) -> ForgeApi:
        from retrieval_gate.forge.gitlab.api import GitLabProject  # python-gitlab, requests: kept from start-up

        return GitLabProject(note_token=settings.comment_token, write_token=settings.write_token,
                             project=settings.repository, api_url=settings.api_url, scrub=scrub)

    def pull_page(self, *, host: str, path: str) -> str | None:
        return f"https://{host}/{path}/-/merge_requests/{{n}}" if "gitlab" in host else None

    def blob_url(self, settings: ForgeSettings, *, ref: str, path: str) -> str:
        return f"{settings.server_url.rstrip('/')}/{settings.repository}/-/blob/{ref}/{path}"
