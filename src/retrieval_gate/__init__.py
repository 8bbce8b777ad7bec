"""retrieval-gate: measure the retrieval step of a RAG system on every pull request."""

__version__ = "0.1.0"
