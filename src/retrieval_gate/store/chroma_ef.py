"""The embedding function our collections carry: one that refuses to embed, so Chroma's default
(which downloads a model) can never run. Embeddings are always passed explicitly."""

from __future__ import annotations

from typing import Any

from retrieval_gate.errors import StoreError

EXPLICIT_EF_NAME = "retrieval_gate_explicit"
_EF_CLASS: Any = None


def explicit_embedding_function() -> Any:
    """An embedding function that refuses to embed (registered once with Chroma)."""
    global _EF_CLASS
    if _EF_CLASS is None:
        from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
        from chromadb.utils.embedding_functions import register_embedding_function

        class ExplicitEmbeddingsOnly(EmbeddingFunction[Documents]):
            """retrieval-gate passes every embedding itself; Chroma must never embed text."""

            def __init__(self) -> None:
                pass

            def __call__(self, input: Documents) -> Embeddings:
                raise StoreError("retrieval-gate passes embeddings explicitly; Chroma was asked to embed text")

            @staticmethod
            def name() -> str:
                return EXPLICIT_EF_NAME

            def default_space(self) -> Any:
                return "cosine"

            def supported_spaces(self) -> Any:
                return ["cosine"]

            @staticmethod
            def build_from_config(config: dict[str, Any]) -> ExplicitEmbeddingsOnly:
                return ExplicitEmbeddingsOnly()

            def get_config(self) -> dict[str, Any]:
                return {}

        register_embedding_function(ExplicitEmbeddingsOnly)
        _EF_CLASS = ExplicitEmbeddingsOnly
    return _EF_CLASS()
