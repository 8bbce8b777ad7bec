"""The end-to-end eval (shell): KB + cases → chunks → embeddings → store → retrievers → scored results.

``run.run_evals`` is the orchestrator; ``dense_parts`` builds the dense side (embedder, cache,
store) it hands to the retriever builder; ``ann_check`` measures the HNSW index against exact search.
"""
