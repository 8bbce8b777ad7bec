"""The embedding cache under damage, at the adapter: a flipped bit, a wrong length, a NaN or a
non-unit vector is evicted (never returned); a cache of schema 1 (no checksums) is replaced; a
shard with a damaged vector contributes only its good ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.embed.check import checksum
from retrieval_gate.embed.shards import import_shards
from retrieval_gate.errors import EmbedderError
from tests.fake_embedder import HashEmbedder, bag_of_words

TEXTS = ["refund a card payment", "reset your password", "export a report", "late fees on invoices"]


def filled(path: Path) -> tuple[CachedEmbedder, np.ndarray]:
    cache = EmbeddingCache(path)
    embedder = CachedEmbedder(HashEmbedder(), cache)
    clean = embedder.embed_documents(TEXTS)
    cache.close()
    return embedder, clean


def damage(path: Path, change) -> None:
    conn = sqlite3.connect(path)
    space, key, blob = conn.execute("SELECT space, key, vec FROM vectors ORDER BY key LIMIT 1").fetchone()
    new_blob, new_crc = change(blob)
    conn.execute("UPDATE vectors SET vec=?, crc=? WHERE space=? AND key=?",
                 (new_blob, new_crc if new_crc is not None else checksum(blob), space, key))
    conn.commit()
    conn.close()


def flip(bit: int):
    def change(blob: bytes):
        data = bytearray(blob)
        data[bit // 8] ^= 1 << (bit % 8)
        return bytes(data), None  # the stored CRC is the old one: the flip is caught by it

    return change


def rewritten(vector_of):  # a vector replaced *with* a matching CRC: caught by the value checks
    def change(blob: bytes):
        new = vector_of(np.frombuffer(blob, dtype=np.float32)).astype(np.float32).tobytes()
        return new, checksum(new)

    return change


@pytest.mark.parametrize("change", [
    flip(0), flip(31), flip(30), flip(100 * 32 + 31),
    rewritten(lambda v: v * 2), rewritten(lambda v: np.where(np.arange(v.size) == 3, np.nan, v)),
    rewritten(lambda v: v[:-1]), rewritten(lambda v: np.concatenate([v, v[:1]])),
], ids=["bit0", "sign", "exponent", "sign-100", "norm-2", "nan", "short", "long"])
def test_a_damaged_entry_is_evicted_and_embedded_again(tmp_path: Path, change) -> None:
    path = tmp_path / "e.sqlite3"
    _, clean = filled(path)
    damage(path, change)
    notes: list[str] = []
    cache = EmbeddingCache(path, notify=notes.append)
    inner = HashEmbedder()
    again = CachedEmbedder(inner, cache).embed_documents(TEXTS)
    np.testing.assert_array_equal(again, clean)
    assert len(inner.documents) == 1 and cache.evicted == 1
    assert notes == [f"embedding cache {path}: 1 entry failed the check (checksum, dimension, finite, unit norm); "
                     "evicted, embedding them again"]
    cache.close()
    reopened = EmbeddingCache(path)
    assert reopened.count() == len(TEXTS)  # the evicted entry was written back, checked
    reopened.close()


def test_a_cache_of_schema_1_is_replaced_never_read(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE vectors (space TEXT NOT NULL, key TEXT NOT NULL, vec BLOB NOT NULL, "
                 "PRIMARY KEY (space, key)) WITHOUT ROWID")
    conn.execute("INSERT INTO meta VALUES ('schema', '1')")
    conn.execute("INSERT INTO vectors VALUES ('s', 'k', ?)", (np.full(4, 9.0, dtype=np.float32).tobytes(),))
    conn.commit()
    conn.close()
    notes: list[str] = []
    cache = EmbeddingCache(path, notify=notes.append)
    assert cache.count() == 0 and "of another schema (1, expected 2)" in notes[0]
    cache.close()


def test_a_model_that_returns_non_unit_vectors_is_an_embedder_error(tmp_path: Path) -> None:
    class Loose(HashEmbedder):
        def embed_documents(self, texts):
            return super().embed_documents(texts) * 3

    with pytest.raises(EmbedderError, match="not finite unit vectors"):
        CachedEmbedder(Loose(), EmbeddingCache(tmp_path / "e.sqlite3")).embed_documents(TEXTS)


def test_a_shard_with_a_damaged_vector_gives_only_its_good_ones(tmp_path: Path) -> None:
    shard = tmp_path / "shard"
    source = EmbeddingCache(shard / "embeddings.sqlite3")
    source.put_many("m:document", [(f"k{i}", bag_of_words(t)) for i, t in enumerate(TEXTS)])
    source.seal()
    damage(shard / "embeddings.sqlite3", flip(31))
    target = EmbeddingCache()
    report = import_shards(target, [shard], spaces=["m:document"])
    assert (report.imported, report.bad) == (3, 1)
    assert report.as_extras()["failed_check"] == 1
