"""The forges the action runs on, one folder each behind one interface (``forge/base.py``), and
the one registry of them (``FORGES``). Adding a forge: docs/ARCHITECTURE.md, "Where to add … a forge"."""

from __future__ import annotations

from collections.abc import Mapping

from retrieval_gate.forge.azure import AzureDevOps
from retrieval_gate.forge.base import Forge
from retrieval_gate.forge.github import GitHub
from retrieval_gate.forge.gitlab import GitLab

# Detection order: the first whose ``detect`` says yes. GitHub last: the default (a local run too).
FORGES: tuple[Forge, ...] = (GitLab(), AzureDevOps(), GitHub())


def detect_forge(env: Mapping[str, str]) -> Forge:
    """The forge whose pipeline this process runs in."""
    return next(forge for forge in FORGES if forge.detect(env))


def forge_named(name: str) -> Forge:
    return next(forge for forge in FORGES if forge.name == name)


def secret_variable_names() -> tuple[frozenset[str], tuple[str, ...]]:
    """Every forge's secret variables: ``(names, prefixes)``."""
    return (frozenset(name for forge in FORGES for name in forge.secret_variables),
            tuple(prefix for forge in FORGES for prefix in forge.secret_prefixes))


def write_token_variables() -> tuple[str, ...]:
    """The variables of the tokens that write a default branch (GitLab's, Azure DevOps')."""
    return tuple(forge.write_token_variable for forge in FORGES if forge.write_token_variable)


def held_write_token(env: Mapping[str, str]) -> str | None:
    """The first write-token variable set (not blank) in ``env``, by name; None when none is."""
    return next((name for name in write_token_variables() if (env.get(name) or "").strip()), None)
