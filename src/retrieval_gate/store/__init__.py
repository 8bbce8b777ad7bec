"""Store: chunking (pure), the exact in-memory index (pure numpy) and the Chroma adapter."""
