"""Reading a real Chroma collection into the exact index (store/chroma_index.exact_index_from):
every row lands under its own id, in id order, across page boundaries."""

from __future__ import annotations

from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings

from retrieval_gate.store import verify
from retrieval_gate.store.chroma_index import exact_index_from
from retrieval_gate.store.verify import row_checks


def collection_with(ids: list[str], vectors: np.ndarray) -> Any:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    name = f"rg-read-{len(ids)}"
    if name in {c.name for c in client.list_collections()}:
        client.delete_collection(name)
    collection = client.create_collection(name, configuration={"hnsw": {"space": "cosine"}})
    checks = row_checks(vectors, ids, [f"card-{cid}" for cid in ids])  # as sync writes them
    collection.add(ids=ids, embeddings=vectors,
                   metadatas=[{"parent_id": f"card-{cid}", "rg_position": i, **check}
                              for i, (cid, check) in enumerate(zip(ids, checks, strict=True))])
    return collection


@pytest.mark.parametrize("page", [1, 3, 7, 10, 50])
def test_every_vector_is_read_into_the_row_of_its_id_across_pages(monkeypatch: pytest.MonkeyPatch,
                                                                   page: int) -> None:
    rng = np.random.default_rng(3)
    ids = [f"z{i:02d}" if i % 2 else f"a{i:02d}" for i in range(10)]  # insert order is not id order
    vectors = rng.standard_normal((10, 6)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # stored vectors are unit vectors
    collection = collection_with(ids, vectors)
    stored = collection.get(ids=ids, include=["embeddings"])  # what Chroma holds under each id
    held = {cid: np.asarray(vec, dtype=np.float32)
            for cid, vec in zip(stored["ids"], stored["embeddings"], strict=True)}
    monkeypatch.setattr(verify, "PAGE", page)
    index = exact_index_from(collection)
    assert index.ids == sorted(ids)
    for row, cid in enumerate(index.ids):
        np.testing.assert_array_equal(index.matrix[row], held[cid])
        np.testing.assert_allclose(index.matrix[row], vectors[ids.index(cid)], rtol=1e-6)
        assert index.card_ids[row] == f"card-{cid}"
        assert index.metadatas[row]["rg_position"] == ids.index(cid)
    assert index.matrix.dtype == np.float32 and index.matrix.flags["C_CONTIGUOUS"]


def test_an_empty_collection_reads_as_an_empty_index() -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("rg-read-empty")
    index = exact_index_from(collection)
    assert index.count() == 0
    assert index.search(np.ones(3, dtype=np.float32), 5) == []
