"""Azure DevOps (Azure Pipelines, the Git REST API 7.1 over urllib): docs/ci.md, "Azure DevOps"."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import quote

from retrieval_gate.forge.azure import settings as azure_settings
from retrieval_gate.forge.azure.ci import pipeline_text
from retrieval_gate.forge.base import Forge, ForgeApi, ForgeSettings, Limits, Pipeline, Words


class AzureDevOps(Forge):
    name = "azure"
    title = "Azure DevOps"
    words = Words(change="pull request", comment="thread", sigil="!", summary="the build's artifacts",
                  fork="a pull request from a fork gets no secrets and no System.AccessToken",
                  no_comment="the thread's text is in {file} (published with the build's artifacts); docs/ci.md "
                             "says which token posts it")
    limits = Limits(comment_chars=150_000, comment_aim=149_000)  # a pull-request comment: 150,000 characters
    settings_module = azure_settings
    secret_variables = (azure_settings.COMMENT_TOKEN_VARIABLE, azure_settings.WRITE_TOKEN_VARIABLE)
    token_variables = secret_variables
    variable_prefixes = ("TF_", "BUILD_", "SYSTEM_", "RETRIEVAL_GATE_AZURE")
    pipeline = Pipeline(path="azure-pipelines.yml", text=pipeline_text)

    def detect(self, env: Mapping[str, str]) -> bool:
        return (env.get("TF_BUILD") or "").lower() == "true"

    def api(self, settings: ForgeSettings, *, scrub: Callable[[str], str], log: Callable[[str], None]) -> ForgeApi:
        from retrieval_gate.forge.azure.api import AzureRepo  # urllib, http.client: kept from start-up

        return AzureRepo(comment_token=settings.comment_token, write_token=settings.write_token,
                         api_url=settings.api_url, scrub=scrub, log=log)

    def pull_page(self, *, host: str, path: str) -> str | None:
        parts = path.split("/")
        if host == "ssh.dev.azure.com" and len(parts) == 4 and parts[0] == "v3":  # v3/org/project/repo
            return f"https://dev.azure.com/{parts[1]}/{parts[2]}/_git/{parts[3]}/pullrequest/{{n}}"
        if (host == "dev.azure.com" or host.endswith(".visualstudio.com")) and "_git" in parts:
            return f"https://{host}/{path}/pullrequest/{{n}}"
        return None

    def blob_url(self, settings: ForgeSettings, *, ref: str, path: str) -> str:
        project, _, repo = settings.repository.partition("/")
        kind = "GC" if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref) else "GB"
        return (f"{settings.server_url}/{quote(project, safe='')}/_git/{quote(repo, safe='')}"
                f"?path=/{quote(path)}&version={kind}{quote(ref, safe='')}")
