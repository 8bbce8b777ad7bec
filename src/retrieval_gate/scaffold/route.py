"""Which CI route a suite's retriever needs: the Docker action, or the wheel in the team's own
Python job. Pure; the one place that knows which retriever specs run the team's code or packages.

The action's image holds retrieval-gate, the bundled model and their dependencies — not the team's
code, its framework (LangChain, LlamaIndex, Haystack) nor its vector database's client. A retriever
spec that imports them can only run where the team installs them: a Python job of its own with the
wheel (``examples/workflows/python-job.yml``; docs/action.md, "The wheel in your own Python job").
Specs are recognised by their prefix, by name — a prefix whose retriever this build does not parse
yet still picks the right workflow."""

from __future__ import annotations

from collections.abc import Sequence

# prefix → what the retriever needs that the image lacks (said in init's output)
OWN_JOB_PREFIXES: dict[str, str] = {
    "python:": "imports your own module and its packages",
    "langchain:": "imports your LangChain app (langchain and its integrations)",
    "llamaindex:": "imports your LlamaIndex app (llama-index and its integrations)",
    "haystack:": "imports your Haystack pipeline (haystack-ai and its integrations)",
    "chroma:": "reads the Chroma collection you already run",
    "pgvector:": "reads your PostgreSQL/pgvector table (a PostgreSQL driver)",
    "qdrant:": "reads your Qdrant collection (qdrant-client)",
}


def retriever_texts(retriever: str | Sequence[str]) -> list[str]:
    """The specs of a suite's ``retriever`` (comma-separated text or a list), stripped."""
    parts = retriever.split(",") if isinstance(retriever, str) else [str(p) for p in retriever]
    return [p.strip() for p in parts if p.strip()]


def own_job_reason(retriever: str | Sequence[str]) -> str | None:
    """Why the suite's retriever needs the team's own Python job (``retriever X: <what>``, one
    clause per spec that needs it), or None when the Docker action can run it."""
    reasons = []
    for spec in retriever_texts(retriever):
        lower = spec.lower()
        for prefix, what in OWN_JOB_PREFIXES.items():
            if lower.startswith(prefix):
                reasons.append(f"retriever {spec} {what}")
                break
    return "; ".join(reasons) or None
