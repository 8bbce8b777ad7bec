"""Chroma adapter: an embedded persistent store (default), an ephemeral one, or a Chroma server.

The persistent folder's layout is in ``store/folder.py``. With a Chroma server the folder holds
only the cache; ``--ephemeral`` keeps nothing on disk.

Embeddings are always passed explicitly: collections carry an embedding function that refuses to
embed, so Chroma's default (which downloads a model) can never run. Space is cosine; HNSW
``max_neighbors`` (M), ``ef_construction`` and ``ef_search`` come from the settings.

The collection's metadata records the store schema, the model (name + files hash), the chunking
and the HNSW build settings. On open, a collection built differently is deleted and rebuilt, and
an unreadable store folder is wiped and rebuilt — each with a note — rather than answering from
stale vectors. ``sync`` is incremental and compares every field a search or a score reads: a
row stays only when its whole metadata — the card's filter fields, ``parent_id`` (the card id),
the text hash and position — is what the chunk would be written with now (``stored_fields``);
a chunk whose text changed is re-embedded (via the cache) and rewritten; a chunk whose text is
unchanged but some other field is not is rewritten with the vector the store holds (never
embedded again: ``SyncReport.relabeled``), deleted first, since chromadb's upsert merges
metadata and would keep a removed field; chunks of removed cards are deleted. So a warm store
holds the very rows a cold build writes.

After every sync each stored vector is read back and checked (``store/verify.py``: checksum,
dimension, finite, unit norm). Any failure of the store — a row that fails the check, an error
chromadb raises while opening, syncing or reading (a Rust panic included: ``PanicException`` is
a ``BaseException``), a truncated HNSW file — rebuilds the collection once, with a note; a store
still failing after that is a ``StoreError`` (exit 2): no numbers come from it.

A persistent store that exists and holds the collection made as wanted is opened, synced and
searched through chromadb's Rust core without importing ``chromadb`` (``chroma_direct``: its
import is 0.4–1 s, most of a warm eval); anything else goes through chromadb's client.
Constructing the adapter touches nothing on disk but a look whether the store exists; when it does
not, it starts importing ``chromadb`` on a second thread (``_import_ahead``: the import then
overlaps the inputs' loading and the model's hashing instead of following them), which the first
open joins. The persistent folder is taken on first use — asking
for ``cache_file`` or opening the collection (``take_folder``: refused when it is not a store
folder, locked, prepared) — and has one writer at a time (``folder.StoreLock``), held until
``close``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.chunk.chunking import Chunk
from retrieval_gate.embed.base import Embedder
from retrieval_gate.embed.check import text_checksum
from retrieval_gate.errors import RetrievalGateError, StoreError, one_line
from retrieval_gate.store import chroma_direct
from retrieval_gate.store.base import ChunkIndex, SyncReport
from retrieval_gate.store.chroma_ef import EXPLICIT_EF_NAME, explicit_embedding_function
from retrieval_gate.store.chroma_index import PAGE, ChromaIndex, exact_index_from, exact_top_cards
from retrieval_gate.store.failures import is_store_failure, rust_panics_quiet
from retrieval_gate.store.folder import (
    CACHE_FILE,
    CHROMA_DIR,
    DEFAULT_STORE_DIR,
    MARKER,
    StoreLock,
    hnsw_damage,
    prepare_root,
    refuse_unusable,
    wipe,
)
from retrieval_gate.store.settings import StoreSettings
from retrieval_gate.store.verify import CHECK_KEY, PROJECTION_KEYS, VerifiedRows, read_verified, row_checks

__all__ = ["CACHE_FILE", "CHROMA_DIR", "MARKER", "ChromaStore", "collection_name"]

DEFAULT_CHROMA_PORT = 8000
COLLECTION_SCHEMA = 2  # 2: every row carries its checksum (``rg_check``); older collections are rebuilt

Notify = Callable[[str], None]
Progress = Callable[[str, int, int], None]


def collection_name(suite: str) -> str:
    """``rg-<suite>`` in Chroma's alphabet ([a-zA-Z0-9._-], 3–512 chars, alphanumeric ends)."""
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", suite).strip("-._") or "default"
    return f"rg-{slug}"[:512].rstrip("-._")


def _import_ahead() -> threading.Thread | None:
    """Import ``chromadb`` on a second thread, unless it is imported already; the thread, to join
    before the client is made. Not a daemon: the interpreter never exits in the middle of it."""
    if "chromadb" in sys.modules:
        return None

    def work() -> None:
        with contextlib.suppress(BaseException):
            import chromadb.config  # noqa: F401  (chromadb itself first)

    thread = threading.Thread(target=work, name="import-chromadb")
    thread.start()
    return thread


class _Broken(Exception):
    """The store failed in a way a rebuild may cure."""


def search_fingerprint(settings: StoreSettings, *, exact: bool) -> dict[str, Any]:
    """The search settings that can change results (not where the store lives)."""
    if exact:
        return {"search": "exact", "space": "cosine"}
    return {"search": "hnsw", "space": "cosine", "hnsw_m": settings.hnsw_m,
            "hnsw_construction_ef": settings.hnsw_construction_ef, "hnsw_search_ef": settings.hnsw_search_ef}


class ChromaStore:
    """See the module docstring. ``open`` happens on the first ``sync``."""

    def __init__(self, settings: StoreSettings, *, collection: str = "rg-default",
                 notify: Notify | None = None, progress: Progress | None = None):
        self.settings = settings
        self.collection_name = collection
        self.notify = notify or (lambda _msg: None)
        self.progress = progress
        self.root: Path | None = None
        self._client: Any = None
        self._collection: Any = None
        self._rebuilt: str | None = None
        self._verified: VerifiedRows | None = None  # the checked rows, kept for exact search
        self._lock: StoreLock | None = None
        if settings.mode != "ephemeral":
            self.root = Path(settings.path or DEFAULT_STORE_DIR)
        # A store that exists is opened through chromadb's Rust core (``chroma_direct``), without
        # importing chromadb; otherwise chromadb's import starts now, on a second thread.
        self._direct = chroma_direct.usable(self.chroma_path)
        self._importing = None if self._direct else _import_ahead()

    # -- the folder ----------------------------------------------------------------------------
    def take_folder(self) -> None:
        """Refuse a folder that is no store, take its lock, prepare it (once; ``close`` lets go).
        Whatever first needs the folder calls it: ``cache_file``, ``open``."""
        if self.root is None or self._lock is not None:
            return
        refuse_unusable(self.root)
        self._lock = StoreLock(self.root, timeout_s=self.settings.lock_timeout_s, notify=self.notify,
                               progress=self.progress)
        try:
            self._rebuilt = prepare_root(self.root, notify=self.notify)
        except BaseException:
            self.close()
            raise

    @property
    def cache_file(self) -> Path | None:
        """The embedding cache's file, in the store folder (taken first); None when ephemeral."""
        self.take_folder()
        return self.root / CACHE_FILE if self.root is not None else None

    @property
    def chroma_path(self) -> Path | None:
        return self.root / CHROMA_DIR if self.root is not None and self.settings.mode == "persistent" else None

    # -- the client and the collection ------------------------------------------------------------
    def _new_client(self) -> Any:
        if self._importing is not None:
            self._importing.join()  # an import that failed there fails again here, with its error
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        mode = self.settings.mode
        if mode == "persistent":
            assert self.chroma_path is not None
            return chromadb.PersistentClient(path=str(self.chroma_path), settings=settings)
        if mode == "ephemeral":
            return chromadb.EphemeralClient(settings=settings)
        host = self.settings.host or "localhost"
        port = self.settings.port or DEFAULT_CHROMA_PORT
        try:
            return chromadb.HttpClient(host=host, port=port, settings=settings)
        except Exception as exc:
            raise StoreError(f"cannot reach the Chroma server at {host}:{port}: {one_line(exc)}") from None

    def _wanted_metadata(self, embedder: Embedder, chunking: Mapping[str, Any]) -> dict[str, Any]:
        ident = embedder.identity()
        return {"rg_schema": COLLECTION_SCHEMA, "rg_model": ident.name, "rg_model_sha256": ident.sha256,
                "rg_chunking": json.dumps(dict(chunking), sort_keys=True),
                "rg_hnsw_m": self.settings.hnsw_m, "rg_hnsw_construction_ef": self.settings.hnsw_construction_ef}

    def _configuration(self) -> dict[str, Any]:
        return {"hnsw": {"space": "cosine", "max_neighbors": self.settings.hnsw_m,
                         "ef_construction": self.settings.hnsw_construction_ef,
                         "ef_search": self.settings.hnsw_search_ef},
                "embedding_function": explicit_embedding_function()}

    def open(self, *, embedder: Embedder, chunking: Mapping[str, Any]) -> Any:
        """The collection, checked; rebuilt when made differently or unreadable (see module doc)."""
        if self._collection is not None:
            return self._collection
        self.take_folder()
        wanted = self._wanted_metadata(embedder, chunking)
        damage = hnsw_damage(self.chroma_path) if self.chroma_path is not None else None
        if damage is not None:
            self.notify(f"store {self.chroma_path}: {damage}; rebuilding it")
            self._rebuilt = f"damaged index: {damage}"
            assert self.root is not None
            wipe(self.root, cache_too=False)
        try:
            with rust_panics_quiet():
                self._collection = self._open_checked(wanted)
        except RetrievalGateError:
            raise
        except BaseException as exc:
            if not is_store_failure(exc):
                raise
            if self.settings.mode != "persistent":
                raise StoreError(f"the Chroma store failed: {one_line(exc)}") from None
            where = self.chroma_path
            self.notify(f"store {where} is unreadable ({one_line(exc)}); rebuilding it")
            self._rebuilt = f"unreadable: {one_line(exc)}"
            self._close_client()
            assert self.root is not None
            wipe(self.root, cache_too=False)
            try:
                with rust_panics_quiet():
                    self._collection = self._open_checked(wanted)
            except BaseException as again:
                if not is_store_failure(again):
                    raise
                raise StoreError(f"store {where} cannot be rebuilt: {one_line(again)}") from None
        return self._collection

    def _open_checked(self, wanted: dict[str, Any]) -> Any:
        direct = self._open_direct(wanted)
        if direct is not None:
            return direct
        self._client = self._new_client()
        client = self._client
        name = self.collection_name
        ef = explicit_embedding_function()
        existing = {c.name if hasattr(c, "name") else str(c) for c in client.list_collections()}
        collection = None
        if name in existing:
            collection = client.get_collection(name, embedding_function=ef)
            reason = "a fresh ephemeral store" if self.settings.mode == "ephemeral" else _mismatch(
                collection.metadata or {}, wanted)
            if reason is not None:
                if self.settings.mode != "ephemeral":
                    self.notify(f"store collection {name!r} {reason}; rebuilding it")
                    self._rebuilt = reason
                client.delete_collection(name)
                collection = None
        if collection is None:
            return client.create_collection(name, configuration=self._configuration(), metadata=wanted,
                                            embedding_function=ef)
        _health_check(collection)
        if _ef_search(collection.configuration) != self.settings.hnsw_search_ef:
            collection.modify(configuration={"hnsw": {"ef_search": self.settings.hnsw_search_ef}})
        return collection

    def _open_direct(self, wanted: dict[str, Any]) -> Any:
        """The collection through chromadb's Rust core when the store holds it made as wanted (and
        searching as set); None, the core let go, when chromadb's client has to decide (create,
        rebuild, reconfigure) or the store cannot be opened so (``chroma_direct.usable``)."""
        path = self.chroma_path
        if not self._direct or path is None or not chroma_direct.usable(path):
            return None
        self._direct = False  # once per store: a rebuild or a reopen goes through the client
        try:
            self._client = chroma_direct.open_direct(path)
        except Exception:  # the core would not start here: chromadb's client decides (and names it)
            return None
        collection = None
        if self.collection_name in self._client.list_collections():
            collection = self._client.get_collection(self.collection_name)
        if (collection is None or _mismatch(collection.metadata, wanted) is not None
                or (collection.configuration.get("embedding_function") or {}).get("name") != EXPLICIT_EF_NAME
                or _ef_search(collection.configuration) != self.settings.hnsw_search_ef):
            self._close_client()
            return None
        _health_check(collection)
        return collection

    def _close_client(self) -> None:
        client, self._client, self._collection = self._client, None, None
        if client is None:
            return
        # chromadb 1.5's HTTP client never closes its httpx session (its stop() skips it): close it
        # here, or every run leaks its keep-alive sockets (a ResourceWarning at exit).
        for owner in (client, getattr(client, "_admin_client", None)):
            session = getattr(getattr(owner, "_server", None), "_session", None)
            if session is not None and hasattr(session, "close"):
                with contextlib.suppress(Exception):
                    session.close()
        if hasattr(client, "close"):
            with contextlib.suppress(Exception):  # closing a broken client: nothing left to release
                client.close()

    def close(self) -> None:
        self._verified = None
        self._close_client()
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    def _where(self) -> str:
        return str(self.chroma_path or self.root or f"{self.settings.host}:{self.settings.port}")

    def _failed(self, exc: BaseException) -> StoreError:
        return StoreError(f"store {self._where()} failed: {type(exc).__name__}: {one_line(exc)}")

    @contextlib.contextmanager
    def _store_failures(self, error: Callable[[BaseException], Exception]) -> Iterator[None]:
        """A store failure raised inside becomes ``error(exc)`` (no traceback); the project's own
        errors and anything else (a bug, Ctrl-C) pass through unchanged."""
        try:
            yield
        except RetrievalGateError:
            raise
        except BaseException as exc:
            if not is_store_failure(exc):
                raise
            raise error(exc) from None

    def _rebuild(self, reason: str) -> None:
        """Drop the collection (the whole chroma/ folder when persistent); the next open makes it anew."""
        self.notify(f"store {self._where()}: {reason}; rebuilding it")
        self._rebuilt = reason
        if self.settings.mode == "persistent":
            self._close_client()
            assert self.root is not None
            wipe(self.root, cache_too=False)
            return
        client, self._collection = self._client, None
        try:
            client.delete_collection(self.collection_name)
        except BaseException as exc:  # a broken collection may not even delete: open() makes a new one
            if not is_store_failure(exc):
                raise

    # -- sync ----------------------------------------------------------------------------------
    def existing(self) -> dict[str, dict[str, Any]]:
        """``{chunk id: its stored metadata}`` of what the collection holds."""
        assert self._collection is not None, "open() first"
        out: dict[str, dict[str, Any]] = {}
        offset = 0
        while True:
            page = self._collection.get(include=["metadatas"], limit=PAGE, offset=offset)
            ids = page["ids"]
            for cid, meta in zip(ids, page["metadatas"] or [{}] * len(ids), strict=True):
                out[cid] = dict(meta or {})
            if len(ids) < PAGE:
                return out
            offset += PAGE

    def sync(self, *, chunks: Sequence[Chunk], embedder: Embedder, chunking: Mapping[str, Any]) -> SyncReport:
        """Make the collection hold exactly ``chunks``, then read every vector back and check it;
        a failure rebuilds once (see the module docstring)."""
        began = time.perf_counter()
        for attempt in (1, 2):
            try:
                report = self._sync_once(chunks=chunks, embedder=embedder, chunking=chunking)
                rows = read_verified(self._collection, keep=self.uses_exact())
            except _Broken as exc:
                problem = str(exc)
            except RetrievalGateError:
                raise
            except BaseException as exc:
                if not is_store_failure(exc):
                    raise
                problem = f"reading it back failed ({type(exc).__name__}: {one_line(exc)})"
            else:
                if not rows.bad:
                    self._verified = rows if self.uses_exact() else None
                    report.seconds = time.perf_counter() - began
                    return report
                problem = (f"{rows.bad} of {rows.total} stored vectors failed the check "
                           "(checksum, dimension, finite, unit norm)")
            if attempt == 2:
                raise StoreError(f"store {self._where()}: {problem}, again after a rebuild; no numbers come from "
                                 "it: delete the store folder, or check the disk")
            self._rebuild(problem)
        raise AssertionError("unreachable")

    def _sync_once(self, *, chunks: Sequence[Chunk], embedder: Embedder, chunking: Mapping[str, Any]) -> SyncReport:
        collection = self.open(embedder=embedder, chunking=chunking)
        report = SyncReport(chunks=len(chunks), rebuilt=self._rebuilt)
        with self._store_failures(lambda exc: _Broken(f"syncing it failed ({type(exc).__name__}: {one_line(exc)})")):
            have = self.existing()
            want = {c.id: c for c in chunks}
            todo: list[Chunk] = []  # new, or its text changed: embedded (through the cache)
            relabel: list[Chunk] = []  # same text, another field changed: rewritten with its stored vector
            for c in chunks:
                held = have.get(c.id)
                if held is None or held.get("rg_sha256") != c.sha256 or not _has_projections(held):
                    todo.append(c)
                elif stored_fields(held) != stored_fields(chunk_metadata(c)):
                    relabel.append(c)
            rewritten = {c.id for c in todo} | {c.id for c in relabel}
            stale = [cid for cid in have if cid not in want or cid in rewritten]
            report.unchanged = len(chunks) - len(todo) - len(relabel)
            batch = max(1, int(self._client.get_max_batch_size()))
            vectors_held = self._stored_vectors([c.id for c in relabel], batch=batch)
            for i in range(0, len(stale), batch):
                collection.delete(ids=stale[i:i + batch])
            report.deleted = len(stale) - len(relabel)
            for i in range(0, len(relabel), batch):
                part = relabel[i:i + batch]
                rows = np.ascontiguousarray(np.stack([vectors_held[c.id] for c in part]), dtype=np.float32)
                # the projections recorded when the vector was embedded stay: the read-back check
                # after the sync still compares the stored vector with what was embedded
                metadatas = [{**chunk_metadata(c), **_relabel_checks(c, have[c.id])} for c in part]
                collection.upsert(ids=[c.id for c in part], embeddings=rows, metadatas=metadatas)
            report.relabeled = len(relabel)
            if todo:
                vectors = embedder.embed_documents([c.text for c in todo])
                for i in range(0, len(todo), batch):
                    part = todo[i:i + batch]
                    rows = np.ascontiguousarray(vectors[i:i + batch], dtype=np.float32)
                    checks = row_checks(rows, chunk_ids=[c.id for c in part], card_ids=[c.parent_id for c in part])
                    collection.upsert(ids=[c.id for c in part], embeddings=rows,
                                      metadatas=[{**chunk_metadata(c), **check}
                                                 for c, check in zip(part, checks, strict=True)])
                    if self.progress is not None:
                        self.progress("indexing", min(i + batch, len(todo)), len(todo))
            report.added = len(todo)
        return report

    def _stored_vectors(self, ids: Sequence[str], *, batch: int) -> dict[str, np.ndarray]:
        """The vectors the collection holds for ``ids`` (rows to rewrite with new metadata)."""
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(ids), batch):
            got = self._collection.get(ids=list(ids[i:i + batch]), include=["embeddings"])
            for cid, row in zip(got["ids"], got["embeddings"], strict=True):
                out[cid] = np.asarray(row, dtype=np.float32).reshape(-1)
        missing = [cid for cid in ids if cid not in out]
        if missing:
            raise _Broken(f"{len(missing)} rows listed by the store could not be read back (e.g. {missing[0]!r})")
        if len({row.shape for row in out.values()}) > 1:
            raise _Broken("its stored vectors have different dimensions")
        return out

    # -- search --------------------------------------------------------------------------------
    def index(self, *, exact: bool | None = None) -> ChunkIndex:
        """The HNSW index of the collection, or an exact index over its stored vectors."""
        assert self._collection is not None, "sync() first"
        with self._store_failures(self._failed):
            if exact is None:
                exact = self.uses_exact()
            if exact:
                return self._verified.index() if self._verified is not None else exact_index_from(self._collection)
            return ChromaIndex(self._collection)

    def exact_cards(self, vectors: np.ndarray, limit: int,
                    wheres: Sequence[dict[str, Any] | None] | None = None) -> list[list[tuple[str, float]]]:
        """Each query's best ``limit`` cards and their scores by exact search over the stored vectors, streamed page
        by page (``chroma_index.exact_top_cards``): the ANN path's sample check, without holding
        the matrix."""
        assert self._collection is not None, "sync() first"
        with self._store_failures(self._failed):
            return exact_top_cards(self._collection, vectors, limit, wheres)

    def uses_exact(self) -> bool:
        """The search mode in force: the setting, or (auto) exact while the collection holds at
        most ``exact_max_chunks`` chunks. Exact search is deterministic whatever order the HNSW
        graph was built in, so a cold rebuild and an incremental sync give the same numbers."""
        if self.settings.exact is not None:
            return self.settings.exact
        assert self._collection is not None, "sync() first"
        return int(self._collection.count()) <= self.settings.exact_max_chunks

    def fingerprint(self) -> dict[str, Any]:
        return search_fingerprint(self.settings, exact=self.uses_exact())


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """The card's scalar metadata (for filters) plus ours: ``parent_id``, ``rg_sha256``,
    ``rg_position``."""
    return {**chunk.metadata, "parent_id": chunk.parent_id, "rg_sha256": chunk.sha256,
            "rg_position": chunk.position}


def stored_fields(metadata: Mapping[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """A row's metadata as the sync compares it: every field but the check values (``rg_check``,
    the projections), each with its type (``1``, ``1.0`` and ``True`` differ to a filter)."""
    return tuple(sorted((str(k), type(v).__name__, repr(v)) for k, v in metadata.items()
                        if k != CHECK_KEY and k not in PROJECTION_KEYS))


def _has_projections(metadata: Mapping[str, Any]) -> bool:
    return all(isinstance(metadata.get(k), int | float) and not isinstance(metadata.get(k), bool)
               for k in PROJECTION_KEYS)


def _relabel_checks(chunk: Chunk, held: Mapping[str, Any]) -> dict[str, Any]:
    """A rewritten row's check values: its checksum for its (new) card id, the projections
    recorded when its vector was embedded."""
    return {CHECK_KEY: text_checksum(chunk.id, chunk.parent_id), **{k: held[k] for k in PROJECTION_KEYS}}


def _mismatch(have: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:
    """Why a collection cannot be reused, in words, or None."""
    if have.get("rg_schema") != wanted["rg_schema"]:
        return f"has store schema {have.get('rg_schema')!r}, expected {wanted['rg_schema']}"
    if have.get("rg_model_sha256") != wanted["rg_model_sha256"]:
        return (f"was built with model {have.get('rg_model')!r} ({str(have.get('rg_model_sha256'))[:12]}), "
                f"not {wanted['rg_model']!r} ({wanted['rg_model_sha256'][:12]})")
    if have.get("rg_chunking") != wanted["rg_chunking"]:
        return f"was built with chunking {have.get('rg_chunking')}, not {wanted['rg_chunking']}"
    for key in ("rg_hnsw_m", "rg_hnsw_construction_ef"):
        if have.get(key) != wanted[key]:
            return f"was built with {key[3:]} = {have.get(key)!r}, not {wanted[key]!r}"
    return None


def _ef_search(configuration: Mapping[str, Any] | None) -> Any:
    """The collection's HNSW ``ef_search`` as its configuration records it (None when absent)."""
    return ((configuration or {}).get("hnsw") or {}).get("ef_search")


def _health_check(collection: Any) -> None:
    """Touch the index once so a corrupt segment fails here, not in the middle of the search."""
    if collection.count() > 0:
        one = collection.get(limit=1, include=["embeddings"])
        collection.query(query_embeddings=np.asarray(one["embeddings"], dtype=np.float32)[:1], n_results=1,
                         include=["distances"])
