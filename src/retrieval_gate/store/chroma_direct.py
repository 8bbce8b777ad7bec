"""A persistent store that exists already, opened through chromadb's Rust core directly.

``import chromadb`` costs ~0.4–1 s (its API models, telemetry and every embedding function it
ships), more than the rest of a warm eval together; the Rust core that holds and searches the
vectors (``chromadb_rust_bindings``, part of the chromadb wheel) imports in milliseconds. When the
store folder already holds the collection made as wanted, ``ChromaStore`` reads, syncs and
searches it through that core, with the calls chromadb's own local client makes
(``chromadb/api/rust.py``: the same database configuration, tenant, database, argument order).
Anything else — no store yet, a collection to create, delete, rebuild or reconfigure, a Chroma
server, an ephemeral store — goes through ``chromadb``'s client as before.

Only the chromadb versions in ``TESTED`` take this path: the bindings are chromadb's inner
interface, so a version not checked here falls back to the client (correct, only slower).
``tests/integration/test_chroma_direct.py`` holds both paths to the same rows, vectors,
metadata and distances on one store.
"""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.errors import StoreError

__all__ = ["TESTED", "DirectClient", "DirectCollection", "open_direct", "usable"]

TESTED = ("1.5.",)  # chromadb versions whose bindings this module's calls are checked against
TENANT = "default_tenant"  # chromadb.config.DEFAULT_TENANT / DEFAULT_DATABASE
DATABASE = "default_database"
SQLITE_FILE = "chroma.sqlite3"


def _tested_version() -> bool:
    import importlib.metadata

    try:
        version = importlib.metadata.version("chromadb")
    except importlib.metadata.PackageNotFoundError:
        return False
    return version.startswith(TESTED)


def _held_by_client(path: Path) -> bool:
    """Whether chromadb's own client holds this folder open in this process (its per-process cache
    of databases): a second core on the same files would not see that one's unsaved index."""
    shared = sys.modules.get("chromadb.api.shared_system_client")
    if shared is None:
        return False
    systems = getattr(getattr(shared, "SharedSystemClient", None), "_identifier_to_system", {})
    here = path.resolve()
    return any(Path(str(key)).resolve() == here for key in systems)


def usable(path: Path | None) -> bool:
    """Whether a store in ``path`` (the ``chroma/`` folder) can be opened directly: it exists, this
    chromadb's bindings are the ones checked, and chromadb's client does not hold it already."""
    return (path is not None and (path / SQLITE_FILE).is_file() and _tested_version()
            and not _held_by_client(path))


def open_direct(path: Path) -> DirectClient:
    """The Rust core on the store in ``path``, configured as chromadb's local client configures it
    (``migrations: apply``, ``md5`` migration hashes, an HNSW cache of a fifth of the file handles)."""
    import chromadb_rust_bindings as core

    sqlite = core.SqliteDBConfig(hash_type=core.MigrationHash.MD5, migration_mode=core.MigrationMode.Apply,
                                 url=str(path / SQLITE_FILE))
    bindings = core.Bindings(allow_reset=False, sqlite_db_config=sqlite, persist_path=str(path),
                             hnsw_cache_size=resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 5)
    return DirectClient(bindings)


class _Core:
    """The Rust core, shared by a client and its collections; ``close`` lets go of it for all."""

    def __init__(self, bindings: Any):
        self._bindings = bindings

    @property
    def bindings(self) -> Any:
        if self._bindings is None:
            raise StoreError("the store was closed; open it again")
        return self._bindings

    def close(self) -> None:
        self._bindings = None  # the last reference: its database connections and index files go now


class DirectClient:
    """What ``ChromaStore`` asks of a client, on the Rust core."""

    def __init__(self, bindings: Any):
        self._core = _Core(bindings)

    def list_collections(self) -> list[str]:
        return [c.name for c in self._core.bindings.list_collections(None, 0, TENANT, DATABASE)]

    def get_collection(self, name: str) -> DirectCollection:
        return DirectCollection(self._core, self._core.bindings.get_collection(name, TENANT, DATABASE))

    def get_max_batch_size(self) -> int:
        return int(self._core.bindings.get_max_batch_size())

    def close(self) -> None:
        """Let go of the core, as chromadb's ``stop`` does; its collections answer no more."""
        self._core.close()


class DirectCollection:
    """What ``ChromaStore``, ``read_verified`` and ``ChromaIndex`` ask of a collection, on the Rust
    core; answers shaped as chromadb's ``Collection`` shapes them (embeddings as numpy arrays)."""

    def __init__(self, core: _Core, model: Any):
        self._core = core
        self._id = str(model.id)
        self.name = str(model.name)
        self.metadata = dict(model.metadata or {})
        configuration = model.configuration
        self.configuration = json.loads(configuration) if isinstance(configuration, str) else dict(configuration or {})

    def count(self) -> int:
        return int(self._core.bindings.count(self._id, TENANT, DATABASE))

    def get(self, *, include: Sequence[str], limit: int | None = None, offset: int = 0,
            ids: Sequence[str] | None = None) -> dict[str, Any]:
        got = self._core.bindings.get(self._id, list(ids) if ids is not None else None, None, limit, offset, None,
                                 list(include), TENANT, DATABASE)
        out: dict[str, Any] = {"ids": list(got.ids), "metadatas": got.metadatas if "metadatas" in include else None}
        out["embeddings"] = np.array(got.embeddings) if "embeddings" in include else None
        return out

    def query(self, *, query_embeddings: np.ndarray, n_results: int, include: Sequence[str],
              where: dict[str, Any] | None = None) -> dict[str, Any]:
        rows = [np.asarray(row, dtype=np.float32) for row in np.asarray(query_embeddings, dtype=np.float32)]
        got = self._core.bindings.query(self._id, None, rows, n_results, json.dumps(where) if where else None, None,
                                   list(include), TENANT, DATABASE)
        return {"ids": got.ids, "metadatas": got.metadatas if "metadatas" in include else None,
                "distances": got.distances if "distances" in include else None}

    def delete(self, *, ids: Sequence[str]) -> None:
        self._core.bindings.delete(self._id, list(ids), None, None, None, TENANT, DATABASE)

    def upsert(self, *, ids: Sequence[str], embeddings: np.ndarray, metadatas: Sequence[dict[str, Any]]) -> None:
        rows = [np.asarray(row, dtype=np.float32) for row in embeddings]
        self._core.bindings.upsert(self._id, list(ids), rows, list(metadatas), None, None, TENANT, DATABASE)
