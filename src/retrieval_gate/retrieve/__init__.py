"""Retrieve: retrievers behind one small contract (ADR-072 §2)."""
