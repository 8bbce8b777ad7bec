"""No user code beside a token that writes the default branch (docs/ci.md): a process that holds
GitLab's ``RETRIEVAL_GATE_GITLAB_WRITE_TOKEN`` or Azure DevOps' ``RETRIEVAL_GATE_AZURE_WRITE_TOKEN``
(any forge's ``Tokens.write_variable``, from the registry) runs no ``python:`` or framework retriever, sends
no query to an HTTP retriever, a store adapter (``chroma:``, ``pgvector:``, ``qdrant:``) or an
embedding endpoint (``model: openai:…``) — the action (``publish.action_settings``) and every command that
runs retrievers (``eval``, ``sweep``, ``cases draft``, ``init`` drafting from a log) refuse
through :func:`refuse_user_code`, naming the variable, never its value."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from retrieval_gate.errors import UsageError
from retrieval_gate.forge import held_write_token
from retrieval_gate.retrieve.spec import FRAMEWORKS, STORE_KINDS, RetrieverSpec

# FRAMEWORKS (langchain:, llamaindex:, haystack:) run the team's code; http and STORE_KINDS (chroma:,
# pgvector:, qdrant:) send the queries, or their vectors, to a server the config names
USER_CODE_KINDS = ("python", "http", *FRAMEWORKS, *STORE_KINDS)


def refuse_user_code(specs: Iterable[RetrieverSpec], *, variable: str | None, advice: str) -> None:
    """Exit 2 (``UsageError``) when ``variable`` (a write token's, held) is set and a spec runs user
    code (``python:``) or sends the queries out (``http(s)://``); ``advice``: what to do instead."""
    if variable is None:
        return
    for spec in specs:
        if spec.kind in USER_CODE_KINDS:
            what = ("an HTTP retriever" if spec.kind == "http" else f"a {spec.kind}: store adapter"
                    if spec.kind in STORE_KINDS else f"a {spec.kind}: retriever")
            raise UsageError(f"retriever {spec.name}: {what} is refused while {variable} is set (a token that "
                             f"writes the default branch): {advice}")


def refuse_user_code_here(specs: Iterable[RetrieverSpec], *, env: Mapping[str, str], command: str,
                          model: str | None = None) -> None:
    """``refuse_user_code`` for a command of the CLI, with any forge's write token in ``env``; and
    ``model`` an embedding endpoint's (``openai:…``, which sends every text out) is refused the same way."""
    variable = held_write_token(env)
    advice = f"run `{command}` in a job or shell without it (docs/ci.md)"
    refuse_user_code(specs, variable=variable, advice=advice)
    if variable is not None and model is not None and model.lower().startswith("openai:"):
        raise UsageError(f"model {model}: an embedding endpoint is refused while {variable} is set (a token that "
                         f"writes the default branch): {advice}")
