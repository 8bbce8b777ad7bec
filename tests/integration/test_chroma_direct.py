"""A warm persistent store opened through chromadb's Rust core (``store/chroma_direct.py``) reads,
writes and searches exactly as chromadb's own client does on the same files: the client is the
independent check here (real chromadb, a fake of our Embedder)."""

from __future__ import annotations

from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings

from retrieval_gate.errors import StoreError
from retrieval_gate.store import chroma_direct
from retrieval_gate.store.chroma import CHROMA_DIR, ChromaStore
from retrieval_gate.store.chroma_direct import DirectClient
from tests.fake_embedder import bag_of_words
from tests.integration.test_dense_store import CARDS, Session, chunks_of

pytestmark = pytest.mark.skipif(not chroma_direct._tested_version(),
                                reason="this chromadb is not one the direct path is checked against (TESTED)")

MORE = {f"topic{i}": [f"topic {i} note about {word} and {other}" for word in ("cards", "tax", "email")]
        for i, other in enumerate(("refunds", "invoices", "passwords", "states", "clients", "payments"))}
META = {card: {"team": "billing" if i % 2 else "support"} for i, card in enumerate({**CARDS, **MORE})}
QUERIES = ("how long do card refunds take", "send an invoice", "tax in a state", "reset password", "topic 3 email")


def build(root: Path, cards: dict[str, list[str]] | None = None) -> None:
    s = Session(root, exact=False)
    s.sync(chunks_of(cards or {**CARDS, **MORE}, META))
    s.close()


def answers(store: ChromaStore) -> list[tuple[list[float], set[str]]]:
    """Each search's scores, and the chunks scored above the last one. HNSW breaks ties in no fixed
    order (the same store, opened twice by chromadb's client, ranks tied chunks differently),
    so the chunks tied at the cut are left out of the comparison."""
    out = []
    for exact in (False, True):
        index = store.index(exact=exact)
        for where in (None, {"team": "billing"}):
            for q in QUERIES:
                hits = index.search(bag_of_words(q), 4, where)
                out.append(([h.score for h in hits], {h.chunk_id for h in hits if h.score > hits[-1].score}))
    return out


def client_rows(path: Path) -> dict:
    """Everything chromadb's own client reads from the store (closed after)."""
    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    try:
        (name,) = [c.name for c in client.list_collections()]
        got = client.get_collection(name).get(include=["embeddings", "metadatas"])
        order = np.argsort(got["ids"])
        return {"ids": [got["ids"][i] for i in order], "metadatas": [got["metadatas"][i] for i in order],
                "embeddings": np.asarray(got["embeddings"])[order]}
    finally:
        client.close()


def test_a_warm_store_reopens_through_the_core_and_answers_as_chromadbs_client(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    build(tmp_path / "s")
    direct = Session(tmp_path / "s", exact=False)
    report = direct.sync(chunks_of({**CARDS, **MORE}, META))
    assert isinstance(direct.store._client, DirectClient) and report.unchanged == report.chunks == 24
    got = answers(direct.store)
    direct.close()
    monkeypatch.setattr(chroma_direct, "TESTED", ("no such version",))
    client = Session(tmp_path / "s", exact=False)
    client.sync(chunks_of({**CARDS, **MORE}, META))
    assert not isinstance(client.store._client, DirectClient)
    assert answers(client.store) == got  # HNSW and exact, with and without a filter: ids and scores alike
    client.close()
    assert all(scores for scores, _above in got) and sum(len(above) for _scores, above in got) >= 20


def test_a_sync_written_through_the_core_leaves_the_rows_the_client_path_leaves(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    edited = {**CARDS, **MORE, "refund": ["refunds to cards now take three days"], "tax": [],
              "invoice": ["create an invoice for a client", "invoices go out by post and by email"]}
    del edited["login"]
    for name in ("core", "client"):
        build(tmp_path / name)
    core = Session(tmp_path / "core")
    core_report = core.sync(chunks_of(edited, META))
    assert isinstance(core.store._client, DirectClient)
    core.close()
    monkeypatch.setattr(chroma_direct, "TESTED", ("no such version",))
    client = Session(tmp_path / "client")
    client_report = client.sync(chunks_of(edited, META))
    client.close()
    assert (core_report.added, core_report.deleted) == (client_report.added, client_report.deleted) == (2, 5)
    a, b = client_rows(tmp_path / "core" / CHROMA_DIR), client_rows(tmp_path / "client" / CHROMA_DIR)
    assert a["ids"] == b["ids"] and "login#0" not in a["ids"] and "refund#1" not in a["ids"]
    assert a["metadatas"] == b["metadatas"]
    assert np.array_equal(a["embeddings"], b["embeddings"])
    for cid, text in (("refund#0", edited["refund"][0]), ("invoice#1", edited["invoice"][1])):
        assert np.array_equal(a["embeddings"][a["ids"].index(cid)].astype(np.float32), bag_of_words(text))


def test_the_core_reads_what_the_client_reads_row_for_row(tmp_path: Path) -> None:
    build(tmp_path / "s")
    path = tmp_path / "s" / CHROMA_DIR
    want = client_rows(path)
    core = chroma_direct.open_direct(path)
    (name,) = core.list_collections()
    collection = core.get_collection(name)
    got = collection.get(include=["embeddings", "metadatas"], limit=7, offset=3)
    all_rows = collection.get(include=["embeddings", "metadatas"])
    assert sorted(all_rows["ids"]) == want["ids"] and got["ids"] == all_rows["ids"][3:10]
    assert np.array_equal(got["embeddings"], all_rows["embeddings"][3:10])
    by_id = dict(zip(all_rows["ids"], range(len(all_rows["ids"])), strict=True))
    for i, cid in enumerate(want["ids"]):
        assert all_rows["metadatas"][by_id[cid]] == want["metadatas"][i]
        assert np.array_equal(all_rows["embeddings"][by_id[cid]], want["embeddings"][i])
    assert collection.count() == len(want["ids"])
    assert collection.metadata["rg_schema"] == 2 and collection.configuration["hnsw"]["space"] == "cosine"
    core.close()


def test_a_store_the_client_holds_open_is_not_opened_a_second_time(tmp_path: Path) -> None:
    build(tmp_path / "s")
    path = tmp_path / "s" / CHROMA_DIR
    assert chroma_direct.usable(path)
    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    assert not chroma_direct.usable(path)
    client.close()
    assert chroma_direct.usable(path)
    assert not chroma_direct.usable(tmp_path / "nothing-here")


def test_a_store_made_differently_goes_to_the_client_and_is_rebuilt_with_a_note(tmp_path: Path) -> None:
    build(tmp_path / "s")
    s = Session(tmp_path / "s", exact=False)
    s.sync(chunks_of({**CARDS, **MORE}, META), chunking={"strategy": "markdown", "size": 400})
    assert not isinstance(s.store._client, DirectClient)
    assert any("rebuilding" in note and "chunking" in note for note in s.notes)
    s.close()


def test_closing_the_store_lets_go_of_the_core_for_an_index_kept_past_it(tmp_path: Path) -> None:
    build(tmp_path / "s")
    s = Session(tmp_path / "s", exact=False)
    s.sync(chunks_of({**CARDS, **MORE}, META))
    index = s.store.index(exact=False)
    assert index.search(bag_of_words("send an invoice"), 2)
    s.close()
    with pytest.raises(StoreError, match="closed"):
        index.search(bag_of_words("send an invoice"), 2)


def test_a_core_that_will_not_start_leaves_the_store_to_chromadbs_client_not_a_rebuild(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(tmp_path / "s")

    def refuse(path: Path) -> DirectClient:
        raise OverflowError("can't convert negative int to unsigned")

    monkeypatch.setattr(chroma_direct, "open_direct", refuse)
    s = Session(tmp_path / "s", exact=False)
    report = s.sync(chunks_of({**CARDS, **MORE}, META))
    assert not isinstance(s.store._client, DirectClient)
    assert (report.unchanged, report.rebuilt, s.notes) == (24, None, [])
    s.close()
