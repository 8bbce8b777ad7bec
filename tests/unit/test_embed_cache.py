"""The content-addressed embedding cache and the cached embedder in front of a model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.embed.resolve import bundled_model_path, resolve_model
from retrieval_gate.embed.sentence import SentenceTransformerEmbedder
from retrieval_gate.errors import EmbedderError
from retrieval_gate.files import sha256_bytes
from tests.fake_embedder import HashEmbedder, bag_of_words


def vec(*values: float) -> np.ndarray:
    """A unit vector along ``values`` (the cache only gives back unit vectors)."""
    raw = np.asarray(values, dtype=np.float32)
    return raw / np.linalg.norm(raw)


@pytest.fixture(params=["memory", "sqlite"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> EmbeddingCache:
    c = EmbeddingCache(tmp_path / "e.sqlite3" if request.param == "sqlite" else None)
    yield c
    c.close()


def test_put_then_get_round_trips_float32_exactly(cache: EmbeddingCache) -> None:
    cache.put_many("m:document", [("k1", vec(0.1, 0.2, 0.3)), ("k2", vec(1, 0, 0))])
    got = cache.get_many("m:document", ["k1", "k2", "missing"])
    assert set(got) == {"k1", "k2"}
    assert got["k1"].dtype == np.float32
    assert np.array_equal(got["k1"], vec(0.1, 0.2, 0.3))


def test_spaces_are_separate(cache: EmbeddingCache) -> None:
    cache.put_many("m1:document", [("k", vec(1, 0))])
    assert cache.get_many("m2:document", ["k"]) == {}
    assert cache.get_many("m1:query", ["k"]) == {}
    assert cache.count("m1:document") == 1


def test_sqlite_cache_persists_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    first = EmbeddingCache(path)
    first.put_many("s", [(f"k{i}", vec(i, 1)) for i in range(1200)])  # > one SELECT … IN page
    first.close()
    again = EmbeddingCache(path)
    got = again.get_many("s", [f"k{i}" for i in range(1200)])
    again.close()
    assert len(got) == 1200 and np.array_equal(got["k1199"], vec(1199, 1))


@pytest.mark.parametrize("damage", ["garbage", "foreign_db", "other_schema"])
def test_unreadable_or_foreign_cache_file_is_replaced_with_a_note(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "e.sqlite3"
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    else:
        conn = sqlite3.connect(path)
        if damage == "foreign_db":
            conn.execute("CREATE TABLE other (x)")
        else:
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("CREATE TABLE vectors (space, key, vec)")
            conn.execute("INSERT INTO meta VALUES ('schema', '0')")
        conn.commit()
        conn.close()
    notes: list[str] = []
    cache = EmbeddingCache(path, notify=notes.append)
    cache.put_many("s", [("k", vec(1, 2))])
    assert np.array_equal(cache.get_many("s", ["k"])["k"], vec(1, 2))
    cache.close()
    assert len(notes) == 1 and "starting a new one" in notes[0] and str(path) in notes[0]


def test_cached_embedder_embeds_each_distinct_text_once_and_answers_in_order() -> None:
    inner = HashEmbedder()
    emb = CachedEmbedder(inner, EmbeddingCache())
    texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon zeta"]
    out = emb.embed_documents(texts)
    assert sorted(inner.documents) == sorted(set(texts))
    assert np.array_equal(out, np.stack([bag_of_words(t) for t in texts]))
    assert emb.stats.documents == 3 and emb.stats.documents_embedded == 3


def test_second_call_embeds_nothing_and_only_new_texts_after_a_change() -> None:
    inner = HashEmbedder()
    emb = CachedEmbedder(inner, EmbeddingCache())
    emb.embed_documents(["a", "b", "c"])
    inner.documents.clear()
    emb.embed_documents(["a", "b", "c"])
    assert inner.documents == []
    emb.embed_documents(["a", "b changed", "c"])
    assert inner.documents == ["b changed"]


def test_queries_and_documents_are_cached_apart() -> None:
    inner = HashEmbedder()
    emb = CachedEmbedder(inner, EmbeddingCache())
    emb.embed_documents(["same text"])
    emb.embed_queries(["same text"])
    assert inner.documents == ["same text"] and inner.queries == ["same text"]


def test_another_model_identity_misses_the_cache() -> None:
    cache = EmbeddingCache()
    CachedEmbedder(HashEmbedder(sha256="a" * 64), cache).embed_documents(["x"])
    other = HashEmbedder(sha256="b" * 64)
    CachedEmbedder(other, cache).embed_documents(["x"])
    assert other.documents == ["x"]


def test_cache_keys_are_model_hash_kind_and_text_sha256() -> None:
    cache = EmbeddingCache()
    CachedEmbedder(HashEmbedder(sha256="a" * 64), cache).embed_queries(["hello"])
    key = sha256_bytes(b"hello")
    assert set(cache.get_many(f"{'a' * 64}:query", [key])) == {key}


def test_progress_reports_slices_of_missing_texts_longest_first() -> None:
    inner = HashEmbedder()
    steps: list[tuple[str, int, int]] = []
    emb = CachedEmbedder(inner, EmbeddingCache(), progress=lambda *s: steps.append(s), slice_size=2)
    emb.embed_documents(["aa", "a", "aaaa", "aaa", "aaaaa"])
    assert steps == [("embedding passages", 0, 5), ("embedding passages", 2, 5), ("embedding passages", 4, 5),
                     ("embedding passages", 5, 5)]
    assert inner.documents == ["aaaaa", "aaaa", "aaa", "aa", "a"]


def test_embedder_returning_the_wrong_number_of_vectors_is_an_embedder_error() -> None:
    class Short(HashEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return super().embed_documents(texts)[:-1]

    with pytest.raises(EmbedderError, match="returned 1 vectors for 2 texts"):
        CachedEmbedder(Short(), EmbeddingCache()).embed_documents(["a", "b"])


def test_fully_cached_texts_never_load_the_real_model(tmp_path: Path) -> None:
    ref = resolve_model("all-MiniLM-L6-v2")
    real = SentenceTransformerEmbedder(ref)
    cache = EmbeddingCache(tmp_path / "e.sqlite3")
    emb = CachedEmbedder(real, cache)
    # fill the cache under the real model's identity, as an earlier run would have
    cache.put_many(emb.space("document"), [(sha256_bytes(b"cached passage"), vec(*([1.0] * 384)))])
    out = emb.embed_documents(["cached passage"])
    assert out.shape == (1, 384)
    assert real.loaded is False


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_bundled_names_resolve_offline_to_the_package_folder(name: str) -> None:
    ref = resolve_model(name)
    assert ref.source == "bundled" and ref.path == bundled_model_path()
    assert len(ref.sha256) == 64


def test_a_local_folder_resolves_to_itself_and_shares_the_bundled_hash() -> None:
    ref = resolve_model(str(bundled_model_path()))
    assert ref.source == "local" and ref.sha256 == resolve_model("all-MiniLM-L6-v2").sha256


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_model_name_is_an_embedder_error(name: str) -> None:
    with pytest.raises(EmbedderError, match="empty"):
        resolve_model(name)


def test_a_folder_that_is_not_a_model_is_an_embedder_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="not a sentence-transformers model folder"):
        resolve_model(str(tmp_path))


def test_missing_names_the_keys_without_a_row(cache: EmbeddingCache) -> None:
    cache.put_many("m:document", [("k1", vec(1, 0)), ("k2", vec(0, 1))])
    assert cache.missing("m:document", ["k2", "k3", "k1", "k3"]) == ["k3"]
    assert cache.missing("m:query", ["k1"]) == ["k1"]  # another space holds nothing of it


class LoadsAhead(HashEmbedder):
    """A fake that counts the calls of ``load_ahead`` (what ``OnnxEmbedder`` starts a thread for)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = 0

    def load_ahead(self) -> None:
        self.started += 1


def test_load_ahead_starts_the_model_only_when_a_passage_is_not_cached(cache: EmbeddingCache) -> None:
    inner = LoadsAhead()
    embedder = CachedEmbedder(inner, cache)
    embedder.embed_documents(["alpha beta", "gamma"])
    embedder.load_ahead_for(["gamma", "alpha beta"])  # all cached: nothing to load
    assert inner.started == 0
    embedder.load_ahead_for(["gamma", "a new passage"])
    assert inner.started == 1
    CachedEmbedder(HashEmbedder(), cache).load_ahead_for(["another"])  # an embedder without it: nothing to start


def test_an_onnx_load_that_fails_on_its_thread_fails_the_first_embed_with_its_error(tmp_path: Path) -> None:
    from retrieval_gate.embed.onnx import REJECTED_FILE, OnnxEmbedder
    from retrieval_gate.embed.resolve import ModelRef

    ref = ModelRef(name="m", path=tmp_path / "model", source="local", sha256="a" * 64)
    rejected = tmp_path / "exports" / ref.sha256 / REJECTED_FILE
    rejected.parent.mkdir(parents=True)
    rejected.write_text("{}", encoding="utf-8")
    embedder = OnnxEmbedder(ref, backend="onnx", export_root=tmp_path / "exports")
    with pytest.raises(EmbedderError, match="disagrees with sentence-transformers"):
        embedder.embed_documents(["text"])  # loaded in line
    embedder.load_ahead()
    assert embedder._loading is not None
    embedder._loading.join()
    rejected.unlink()  # the error the thread met is the one raised, not a second load's
    with pytest.raises(EmbedderError, match="disagrees with sentence-transformers"):
        embedder.embed_documents(["text"])
    assert not embedder.loaded
