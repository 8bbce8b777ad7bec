"""Truncated and flipped HNSW files on a real Chroma store big enough to have flushed its index
to disk (real chromadb; a fake of our Embedder interface, for speed): the next sync rebuilds, and
every search answers as the clean store did."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.chunk.chunking import make_chunk
from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.store.chroma import ChromaStore, collection_name
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import HashEmbedder, bag_of_words

WORDS = ["refund", "invoice", "tax", "card", "bank", "payout", "dispute", "plan", "login", "password", "export",
         "report", "team", "role", "currency", "template", "reminder", "fee", "late", "credit", "note",
         "subscription", "cancel"]
CHUNKS = [make_chunk(id=f"c{i:05d}", parent_id=f"card{i // 3:05d}", position=i % 3,
                     text=" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 7)) + f" item{i}")
          for i in range(2400)]
QUERIES = ["refund to card", "late fee reminder", "export the tax report", "reset login password"]
CHUNKING = {"strategy": "test"}


def run(root: Path, *, exact: bool) -> tuple[list[list[tuple[str, float]]], list[str]]:
    notes: list[str] = []
    store = ChromaStore(StoreSettings(path=str(root), exact=exact), collection=collection_name("hnsw"),
                        notify=notes.append)
    cache = EmbeddingCache(store.cache_file, notify=notes.append)
    try:
        store.sync(chunks=CHUNKS, embedder=CachedEmbedder(HashEmbedder(), cache), chunking=CHUNKING)
        index = store.index(exact=exact)
        # ids with their scores (to 5 places): many chunks tie, and HNSW may order ties either way
        return [sorted((h.chunk_id, round(h.score, 5)) for h in index.search(bag_of_words(q), 10)
                       if not exact or round(h.score, 5) > round(index.search(bag_of_words(q), 11)[-1].score, 5))
                for q in QUERIES], notes
    finally:
        cache.close()
        store.close()


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[bool, list[list[str]]]]:
    root = tmp_path_factory.mktemp("hnsw") / "store"
    answers = {exact: run(root, exact=exact)[0] for exact in (True, False)}
    assert list(root.glob("chroma/*/data_level0.bin")), "the index was not flushed to disk"
    return root, answers


@pytest.mark.parametrize("name", ["data_level0.bin", "link_lists.bin", "header.bin", "length.bin"])
@pytest.mark.parametrize("damage", ["truncate", "flip"])
@pytest.mark.parametrize("exact", [True, False])
def test_a_damaged_hnsw_file_rebuilds_or_stops_never_answers_wrong(clean: tuple[Path, dict], tmp_path: Path,
                                                                    name: str, damage: str, exact: bool) -> None:
    import shutil

    root, answers = clean
    store = tmp_path / "store"
    shutil.copytree(root, store)
    files = list(store.glob(f"chroma/*/{name}"))
    if not files:
        pytest.skip(f"this chromadb writes no {name}")
    data = bytearray(files[0].read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif data:
        for at in range(0, len(data), max(1, len(data) // 64)):  # 64 flips of the top exponent bit
            data[at] ^= 0x40
    files[0].write_bytes(bytes(data))
    from retrieval_gate.errors import StoreError

    try:
        got, notes = run(store, exact=exact)
    except StoreError as exc:  # rebuilding could not help: a one-line error, exit 2 at the CLI
        assert "\n" not in str(exc)
        return
    if exact:
        assert got == answers[True], notes
    else:  # HNSW builds are not deterministic (threads): every hit must carry its true cosine
        import numpy as np

        text = {c.id: c.text for c in CHUNKS}
        for query, hits in zip(QUERIES, got, strict=True):
            for cid, score in hits:
                assert abs(score - float(np.dot(bag_of_words(query), bag_of_words(text[cid])))) < 1e-4
    if name == "data_level0.bin" and damage == "truncate":  # the vectors themselves were cut
        assert any("rebuilding" in note for note in notes), notes
