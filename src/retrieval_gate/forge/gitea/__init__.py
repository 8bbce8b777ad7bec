"""Gitea and Forgejo (Actions, the REST API v1 over urllib): docs/ci.md, "Gitea and Forgejo"."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import quote

from retrieval_gate.forge.base import Forge, ForgeApi, ForgeSettings, Limits, Pipeline, Words
from retrieval_gate.forge.gitea import settings as gitea_settings
from retrieval_gate.forge.gitea.ci import PATH, pipeline_text


class Gitea(Forge):
    name = "gitea"
    title = "Gitea"
    words = Words(change="pull request", comment="comment", sigil="#", summary="the job's artifacts",
                  fork="a pull request from a fork gets no secrets, so no token", run_link="workflow run",
                  no_comment="the comment is in {file} (keep it with the job's artifacts); docs/ci.md says which "
                             "token posts it")
    limits = Limits(comment_chars=65_536, comment_aim=65_000)  # Gitea sets none; GitHub's, for a readable comment
    # Its runner (act) obeys ``::`` commands, but Gitea shows no annotations: warnings are plain log
    # lines, and every line goes through ``render.escape.escape_terminal`` (no ``::`` command starts)
    settings_module = gitea_settings
    token_variables = (gitea_settings.COMMENT_TOKEN_VARIABLE, gitea_settings.WRITE_TOKEN_VARIABLE)
    variable_prefixes = ("GITEA_", "FORGEJO_", "RETRIEVAL_GATE_GITEA")
    secret_variables = (*token_variables, *gitea_settings.SECRET_VARIABLES)
    secret_prefixes = gitea_settings.SECRET_PREFIXES
    pipeline = Pipeline(path=PATH, text=pipeline_text)

    def detect(self, env: Mapping[str, str]) -> bool:
        # before GitHub in the registry: the runner sets GITHUB_* too
        return env.get("GITEA_ACTIONS") == "true" or env.get("FORGEJO_ACTIONS") == "true"

    def api(self, settings: ForgeSettings, *, scrub: Callable[[str], str], log: Callable[[str], None]) -> ForgeApi:
        from retrieval_gate.forge.gitea.api import GiteaRepo  # urllib, http.client: kept from start-up

        return GiteaRepo(comment_token=settings.comment_token, write_token=settings.write_token,
                         repository=settings.repository, api_url=settings.api_url, server_url=settings.server_url,
                         scrub=scrub, log=log)

    def blob_url(self, settings: ForgeSettings, *, ref: str, path: str) -> str:
        kind = "commit" if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref) else "branch"
        return f"{settings.server_url.rstrip('/')}/{settings.repository}/src/{kind}/{quote(ref)}/{quote(path)}"
