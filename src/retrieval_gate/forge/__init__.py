"""The forges the action runs on, one folder each behind one interface (``forge/base.py``), and
the one registry of them (``FORGES``). Adding a forge: docs/ARCHITECTURE.md, "Where to add … a forge"."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

from retrieval_gate.forge.azure import AzureDevOps
from retrieval_gate.forge.base import Forge
from retrieval_gate.forge.gitea import Gitea
from retrieval_gate.forge.github import GitHub
from retrieval_gate.forge.gitlab import GitLab

# Detection order: the first whose ``detect`` says yes. GitHub last: the default (a local run too).
FORGES: tuple[Forge, ...] = (GitLab(), AzureDevOps(), Gitea(), GitHub())


def detect_forge(env: Mapping[str, str]) -> Forge:
    """The forge whose pipeline this process runs in."""
    return next(forge for forge in FORGES if forge.detect(env))


def forge_named(name: str) -> Forge:
    return next(forge for forge in FORGES if forge.name == name)


def secret_variable_names() -> tuple[frozenset[str], tuple[str, ...]]:
    """Every forge's secret variables: ``(names, prefixes)``."""
    return (frozenset(name for forge in FORGES for name in forge.secret_variables),
            tuple(prefix for forge in FORGES for prefix in forge.secret_prefixes))


def held_write_token(env: Mapping[str, str]) -> str | None:
    """The variable of the first forge's token that writes a default branch (GitLab's, Azure
    DevOps': ``Tokens.write_variable``) that ``env`` holds, not blank; None when none is. Each
    forge reads its own tokens (``read_tokens``, the one reader per forge)."""
    for forge in FORGES:
        tokens = forge.read_tokens(env)
        if tokens.holds_write_token:
            return tokens.write_variable
    return None


_SCP = re.compile(r"(?:[^@/:]+@)?([A-Za-z0-9.-]+):(?!/)(.+)\Z")  # git@host:owner/repo.git


def pull_page(remote: str | None) -> str | None:
    """The web page pattern (``{n}``: the number) of the pull / merge requests of the repository
    whose git remote is ``remote``, from the forge that knows its host; None when none does. Only
    the host and the path are kept (a remote's user and password never reach a page)."""
    if not remote or any(c in remote for c in "\n\r\t "):
        return None
    scp = None if "://" in remote else _SCP.match(remote)
    if scp is not None:
        host, path = scp.group(1), scp.group(2)
    else:
        try:
            parts = urlsplit(remote)
            host = parts.hostname or ""
        except ValueError:
            return None
        if parts.scheme not in ("https", "http", "ssh", "git"):
            return None
        path = parts.path
    path = path.strip("/").removesuffix(".git").strip("/")
    if not host or not path or not re.fullmatch(r"[A-Za-z0-9.-]+", host) or ".." in path.split("/"):
        return None
    host, path = host.lower(), quote(path, safe="/-._~")
    return next((page for forge in FORGES if (page := forge.pull_page(host=host, path=path)) is not None), None)
