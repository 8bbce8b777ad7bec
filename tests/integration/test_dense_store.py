"""The Chroma store adapter with a real chromadb (embedded) and a fake of our Embedder:
incremental sync, rebuilds, corruption, foreign folders, exact vs HNSW search."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.chunk.chunking import Chunk, make_chunk
from retrieval_gate.embed.cache import CachedEmbedder, EmbeddingCache
from retrieval_gate.errors import StoreError
from retrieval_gate.store.chroma import CACHE_FILE, CHROMA_DIR, MARKER, ChromaStore, collection_name
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import HashEmbedder, bag_of_words

CHUNKING = {"strategy": "markdown", "size": 1200, "overlap": 150, "by_headings": True}

CARDS = {
    "refund": ["refund a card payment to the customer", "refunds to cards take five to ten days"],
    "invoice": ["create an invoice for a client", "send the invoice by email"],
    "tax": ["sales tax rates by state"],
    "login": ["reset your password from the sign in page"],
}


def chunks_of(cards: dict[str, list[str]], meta: dict[str, dict] | None = None) -> list[Chunk]:
    return [make_chunk(id=f"{card}#{i}", parent_id=card, text=text, position=i, metadata=(meta or {}).get(card))
            for card, texts in cards.items() for i, text in enumerate(texts)]


class Session:
    """One run's worth of adapters over a store folder (a new process would build the same)."""

    def __init__(self, root: Path | None, inner: HashEmbedder | None = None, **settings: object):
        mode = "persistent" if root is not None else "ephemeral"
        self.notes: list[str] = []
        self.store = ChromaStore(StoreSettings(mode=mode, path=str(root) if root else None, **settings),
                                 collection=collection_name("test"), notify=self.notes.append)
        self.inner = inner or HashEmbedder()
        self.cache = EmbeddingCache(self.store.cache_file, notify=self.notes.append)
        self.embedder = CachedEmbedder(self.inner, self.cache)

    def sync(self, chunks: list[Chunk], chunking: dict | None = None):
        return self.store.sync(chunks=chunks, embedder=self.embedder, chunking=chunking or CHUNKING)

    def close(self) -> None:
        self.cache.close()
        self.store.close()


def top_card(store: ChromaStore, query: str, exact: bool = False) -> str:
    return store.index(exact=exact).search(bag_of_words(query), 1)[0].card_id


def test_first_sync_embeds_and_writes_every_chunk(tmp_path: Path) -> None:
    s = Session(tmp_path / "store")
    report = s.sync(chunks_of(CARDS))
    assert (report.chunks, report.added, report.deleted, report.unchanged, report.rebuilt) == (6, 6, 0, 0, None)
    assert sorted(s.inner.documents) == sorted(t for ts in CARDS.values() for t in ts)
    assert top_card(s.store, "how long do card refunds take") == "refund"
    assert json.loads((tmp_path / "store" / MARKER).read_text())["schema"] == 1
    assert (tmp_path / "store" / CACHE_FILE).is_file() and (tmp_path / "store" / CHROMA_DIR).is_dir()
    s.close()


def test_rerun_on_an_unchanged_kb_embeds_and_writes_nothing(tmp_path: Path) -> None:
    Session(tmp_path / "s").sync(chunks_of(CARDS))
    again = Session(tmp_path / "s")
    report = again.sync(chunks_of(CARDS))
    assert (report.added, report.deleted, report.unchanged) == (0, 0, 6)
    assert again.inner.documents == []
    assert again.notes == []
    again.close()


def test_a_changed_card_is_re_embedded_alone_and_a_removed_card_leaves_the_store(tmp_path: Path) -> None:
    Session(tmp_path / "s").sync(chunks_of(CARDS))
    changed = {**CARDS, "tax": ["value added tax on digital services"]}
    del changed["login"]
    again = Session(tmp_path / "s")
    report = again.sync(chunks_of(changed))
    assert again.inner.documents == ["value added tax on digital services"]
    assert (report.added, report.deleted, report.unchanged) == (1, 2, 4)  # tax#0 rewritten; tax#0 + login#0 out
    held = again.store.existing()
    assert sorted(held) == sorted(c.id for c in chunks_of(changed))
    assert top_card(again.store, "digital services tax") == "tax"
    assert all(h.card_id != "login" for h in again.store.index().search(bag_of_words("reset password"), 10))
    again.close()


def test_changed_text_under_an_unchanged_id_is_rewritten_not_duplicated(tmp_path: Path) -> None:
    Session(tmp_path / "s").sync(chunks_of(CARDS))
    again = Session(tmp_path / "s")
    again.sync(chunks_of({**CARDS, "refund": ["refund a card payment to the customer", "card refunds are instant"]}))
    exact = again.store.index(exact=True)
    assert exact.count() == 6
    assert again.inner.documents == ["card refunds are instant"]
    again.close()


def test_a_store_built_by_another_model_is_rebuilt_with_a_note(tmp_path: Path) -> None:
    Session(tmp_path / "s").sync(chunks_of(CARDS))
    other = HashEmbedder(name="other-model", sha256="0" * 64)
    again = Session(tmp_path / "s", inner=other)
    report = again.sync(chunks_of(CARDS))
    assert report.rebuilt is not None and "other-model" in report.rebuilt and "fake-bow" in report.rebuilt
    assert len(again.notes) == 1 and "rebuilding" in again.notes[0]
    assert len(other.documents) == 6 and report.added == 6
    again.close()


def test_a_store_built_with_another_chunking_is_rebuilt_from_the_cache(tmp_path: Path) -> None:
    Session(tmp_path / "s").sync(chunks_of(CARDS))
    again = Session(tmp_path / "s")
    report = again.sync(chunks_of(CARDS), chunking={**CHUNKING, "size": 800})
    assert report.rebuilt is not None and "chunking" in report.rebuilt
    assert report.added == 6 and again.inner.documents == []  # same texts: vectors come from the cache
    again.close()


def test_hnsw_build_settings_change_rebuilds_but_search_ef_is_applied_in_place(tmp_path: Path) -> None:
    Session(tmp_path / "s").sync(chunks_of(CARDS))
    ef = Session(tmp_path / "s", hnsw_search_ef=50)
    assert ef.sync(chunks_of(CARDS)).rebuilt is None
    assert ef.store.open(embedder=ef.embedder, chunking=CHUNKING).configuration["hnsw"]["ef_search"] == 50
    ef.close()
    m = Session(tmp_path / "s", hnsw_m=8)
    assert "hnsw_m" in (m.sync(chunks_of(CARDS)).rebuilt or "")
    m.close()


def test_a_corrupted_store_is_rebuilt_with_a_note_and_answers_correctly(tmp_path: Path) -> None:
    Session(tmp_path / "s").sync(chunks_of(CARDS))
    (tmp_path / "s" / CHROMA_DIR / "chroma.sqlite3").write_bytes(b"not a database" * 1000)
    again = Session(tmp_path / "s")
    report = again.sync(chunks_of(CARDS))
    assert report.rebuilt is not None and report.rebuilt.startswith("unreadable")
    assert any("unreadable" in n and "rebuilding" in n for n in again.notes)
    assert report.added == 6 and again.inner.documents == []  # the cache survived
    assert top_card(again.store, "send invoice email") == "invoice"
    again.close()


def test_a_corrupted_index_segment_is_rebuilt(tmp_path: Path) -> None:
    many = {f"card{i}": [f"topic {i} word{i} text"] for i in range(1200)}  # enough to flush an HNSW segment
    first = Session(tmp_path / "s")
    first.sync(chunks_of(many))
    first.close()  # as a finished process would: Chroma keeps an open database's index in memory
    segments = [p for p in (tmp_path / "s" / CHROMA_DIR).glob("*/*.bin")]
    assert segments, "expected HNSW segment files"
    for seg in segments:
        seg.write_bytes(b"\x01" * 64)
    again = Session(tmp_path / "s")
    report = again.sync(chunks_of(many))
    assert report.rebuilt is not None and report.added == 1200
    again.close()


def test_a_non_empty_folder_that_is_not_a_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.tex").write_text("precious")
    with pytest.raises(StoreError, match="not a retrieval-gate store"):
        ChromaStore(StoreSettings(path=str(folder))).take_folder()
    assert (folder / "thesis.tex").read_text() == "precious"
    assert sorted(p.name for p in folder.iterdir()) == ["thesis.tex"]


def test_a_file_as_store_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        ChromaStore(StoreSettings(path=str(tmp_path / "f"))).take_folder()


def test_a_store_of_another_schema_is_wiped_and_rebuilt(tmp_path: Path) -> None:
    first = Session(tmp_path / "s")
    first.sync(chunks_of(CARDS))
    first.close()
    (tmp_path / "s" / MARKER).write_text(json.dumps({"schema": 0}))
    again = Session(tmp_path / "s")
    assert any("schema 0" in n for n in again.notes)
    report = again.sync(chunks_of(CARDS))
    assert report.rebuilt == "store schema 0, expected 1"
    assert report.added == 6 and len(again.inner.documents) == 6  # cache wiped too
    again.close()


def test_ephemeral_stores_start_empty_and_keep_nothing_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = Session(None)
    assert first.store.cache_file is None
    first.sync(chunks_of(CARDS))
    second = Session(None)
    report = second.sync(chunks_of({"tax": CARDS["tax"]}))
    assert report.added == 1 and second.store.index(exact=True).count() == 1
    assert list(tmp_path.iterdir()) == []
    first.close()
    second.close()


def test_exact_and_hnsw_agree_on_a_small_store_and_exact_uses_the_stored_vectors(tmp_path: Path) -> None:
    s = Session(tmp_path / "s")
    chunks = chunks_of(CARDS)
    s.sync(chunks)
    q = bag_of_words("refund invoice payment")
    hnsw = s.store.index(exact=False).search(q, 6)
    exact = s.store.index(exact=True).search(q, 6)
    # chunks sharing no word with the query all score 0: their order is a tie, compare the rest
    assert [h.chunk_id for h in hnsw if h.score > 1e-6] == [h.chunk_id for h in exact if h.score > 1e-6]
    by_hand = sorted(chunks, key=lambda c: (-float(bag_of_words(c.text) @ q), c.id))
    assert [h.chunk_id for h in exact] == [c.id for c in by_hand]
    assert [h.score for h in exact] == pytest.approx([float(bag_of_words(c.text) @ q) for c in by_hand], abs=1e-6)
    assert [h.score for h in hnsw] == pytest.approx([h.score for h in exact], abs=1e-5)
    s.close()


def test_metadata_filters_reach_chroma_and_the_exact_index_alike(tmp_path: Path) -> None:
    s = Session(tmp_path / "s")
    s.sync(chunks_of(CARDS, meta={"refund": {"locale": "en"}, "invoice": {"locale": "pt"},
                                  "tax": {"locale": "pt"}, "login": {"locale": "en"}}))
    q = bag_of_words("refund invoice tax password")
    for exact in (False, True):
        hits = s.store.index(exact=exact).search(q, 10, {"locale": "pt"})
        assert {h.card_id for h in hits} == {"invoice", "tax"}
    s.close()


def test_chroma_is_never_asked_to_embed_text(tmp_path: Path) -> None:
    s = Session(tmp_path / "s")
    s.sync(chunks_of(CARDS))
    collection = s.store.open(embedder=s.embedder, chunking=CHUNKING)
    with pytest.raises(Exception, match="passes embeddings explicitly"):
        collection.query(query_texts=["refund"], n_results=1)
    s.close()


def test_vectors_written_are_the_embedders_vectors(tmp_path: Path) -> None:
    s = Session(tmp_path / "s")
    chunks = chunks_of(CARDS)
    s.sync(chunks)
    exact = s.store.index(exact=True)
    row = exact.ids.index("tax#0")
    assert np.allclose(exact.matrix[row], bag_of_words(CARDS["tax"][0]), atol=1e-7)
    assert exact.metadatas[row]["parent_id"] == "tax"
    s.close()


@pytest.mark.parametrize(("suite", "name"), [("default", "rg-default"), ("my suite/ä", "rg-my-suite"),
                                             ("x", "rg-x"), ("--", "rg-default")])
def test_collection_names_fit_chromas_alphabet(suite: str, name: str) -> None:
    assert collection_name(suite) == name

