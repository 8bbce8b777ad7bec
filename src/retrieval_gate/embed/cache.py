"""Content-addressed embedding cache, for passages and queries.

Key = (space, sha256(text)) with ``space = f"{model files sha256}:{document|query}"``: a vector
is reused exactly when the same model files embedded the same text the same way. Chunking needs
no key of its own — it is part of the text: a passage unchanged by a new chunk size is reused, a
changed one gets a new key. Nothing is ever evicted; delete the file to reclaim space.

Storage: one SQLite file (``embeddings.sqlite3`` in the store folder; float32 blobs) or memory
(``--ephemeral``). A file that is unreadable or of another schema is replaced, with a note.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval_gate.embed.base import Embedder, ModelIdentity
from retrieval_gate.errors import EmbedderError, StoreError
from retrieval_gate.files import sha256_bytes

CACHE_SCHEMA = "1"
CACHE_FILE = "embeddings.sqlite3"  # the cache's name in a store folder and in a shard folder
_SQL_VARS = 500  # keys per SELECT … IN (…)
SLICE_SIZE = 256  # texts per call to the model: the unit of progress, of commits and of shards

Notify = Callable[[str], None]
Progress = Callable[[str, int, int], None]


class EmbeddingCache:
    """``get_many`` / ``put_many`` over (space, key) → float32 vector."""

    def __init__(self, path: Path | None = None, *, notify: Notify | None = None):
        self.path = Path(path) if path is not None else None
        self._notify = notify or (lambda _msg: None)
        self._memory: dict[tuple[str, str], np.ndarray] = {}
        self._conn: sqlite3.Connection | None = None
        if self.path is not None:
            self._conn = self._open(self.path)

    # -- opening -------------------------------------------------------------------------------
    def _open(self, path: Path) -> sqlite3.Connection:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the cache folder {path.parent}: {exc.strerror}") from None
        try:
            conn = self._connect(path)
            problem = self._check(conn)
        except sqlite3.DatabaseError as exc:
            conn, problem = None, f"unreadable ({exc})"
        if problem is None:
            assert conn is not None
            return conn
        if conn is not None:
            conn.close()
        self._notify(f"embedding cache {path} is {problem}; starting a new one")
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        try:
            conn = self._connect(path)
            self._create(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot create the embedding cache {path}: {exc}") from None
        return conn

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _check(self, conn: sqlite3.Connection) -> str | None:
        """None when usable (creating the tables in a new file), else what is wrong."""
        if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return "corrupted"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            self._create(conn)
            return None
        if not {"meta", "vectors"} <= tables:
            return "not an embedding cache"
        row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None or row[0] != CACHE_SCHEMA:
            return f"of another schema ({row[0] if row else 'none'}, expected {CACHE_SCHEMA})"
        return None

    @staticmethod
    def _create(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("CREATE TABLE IF NOT EXISTS vectors (space TEXT NOT NULL, key TEXT NOT NULL, "
                     "vec BLOB NOT NULL, PRIMARY KEY (space, key)) WITHOUT ROWID")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (CACHE_SCHEMA,))

    # -- access --------------------------------------------------------------------------------
    def get_many(self, space: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        keys = list(dict.fromkeys(keys))
        if self._conn is None:
            return {k: self._memory[(space, k)] for k in keys if (space, k) in self._memory}
        out: dict[str, np.ndarray] = {}
        try:
            for i in range(0, len(keys), _SQL_VARS):
                part = keys[i:i + _SQL_VARS]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT key, vec FROM vectors WHERE space=? AND key IN ({marks})", (space, *part))
                for key, blob in rows:
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"embedding cache {self.path} failed: {exc}") from None
        return out

    def put_many(self, space: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        if self._conn is None:
            for key, vec in items:
                self._memory[(space, key)] = np.asarray(vec, dtype=np.float32).copy()
            return
        rows = [(space, key, np.asarray(vec, dtype=np.float32).tobytes()) for key, vec in items]
        try:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            self._conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise StoreError(f"embedding cache {self.path} failed: {exc}") from None

    def count(self, space: str | None = None) -> int:
        if self._conn is None:
            return sum(1 for s, _ in self._memory if space is None or s == space)
        if space is None:
            return self._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
        return self._conn.execute("SELECT COUNT(*) FROM vectors WHERE space=?", (space,)).fetchone()[0]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def seal(self) -> None:
        """Fold the write-ahead log into the file and leave WAL mode, so the cache is one
        self-contained file (a shard folder uploaded as an artifact), then close."""
        if self._conn is not None:
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"embedding cache {self.path} failed: {exc}") from None
        self.close()


@dataclass
class EmbedStats:
    documents: int = 0  # distinct passage texts asked for
    documents_embedded: int = 0  # of which not in the cache
    queries: int = 0
    queries_embedded: int = 0
    seconds: float = 0.0  # time spent in the model (loading included)

    def as_extras(self) -> dict[str, float | int]:
        return {"passages": self.documents, "passages_embedded": self.documents_embedded,
                "passages_cached": self.documents - self.documents_embedded,
                "queries": self.queries, "queries_embedded": self.queries_embedded,
                "queries_cached": self.queries - self.queries_embedded,
                "model_seconds": round(self.seconds, 3)}


class CachedEmbedder:
    """An ``Embedder`` in front of another: looks every text up by hash, embeds only the misses
    (each distinct text once, longest first, in slices so progress can be shown and a stopped
    run keeps what it embedded), stores them, and answers in input order."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, *, progress: Progress | None = None,
                 slice_size: int = SLICE_SIZE):
        self.inner = inner
        self.cache = cache
        self.progress = progress
        self.slice_size = max(1, slice_size)
        self.stats = EmbedStats()
        self._identity: ModelIdentity | None = None

    def identity(self) -> ModelIdentity:
        if self._identity is None:
            self._identity = self.inner.identity()
        return self._identity

    def space(self, kind: str) -> str:
        return f"{self.identity().sha256}:{kind}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "document")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "query")

    def _embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        space = self.space(kind)
        keys = [sha256_bytes(t.encode("utf-8")) for t in texts]
        first_text = dict(zip(keys, texts, strict=True))
        found = self.cache.get_many(space, first_text)
        # Longest first, ties by key: the slices (and so every batch the model sees) depend on the
        # set of texts only, which lets shards (embed/shards.py) give the very same vectors.
        missing = sorted((k for k in first_text if k not in found), key=lambda k: (-len(first_text[k]), k))
        if kind == "document":
            self.stats.documents += len(first_text)
            self.stats.documents_embedded += len(missing)
        else:
            self.stats.queries += len(first_text)
            self.stats.queries_embedded += len(missing)
        stage = "embedding passages" if kind == "document" else "embedding queries"
        if missing and self.progress is not None:
            self.progress(stage, 0, len(missing))
        for start in range(0, len(missing), self.slice_size):
            part = missing[start:start + self.slice_size]
            began = time.perf_counter()
            batch = [first_text[k] for k in part]
            vectors = (self.inner.embed_documents(batch) if kind == "document"
                       else self.inner.embed_queries(batch))
            self.stats.seconds += time.perf_counter() - began
            if vectors.shape[0] != len(part):
                raise EmbedderError(f"the embedder returned {vectors.shape[0]} vectors for {len(part)} texts")
            self.cache.put_many(space, list(zip(part, vectors, strict=True)))
            found.update(zip(part, vectors, strict=True))
            if self.progress is not None:
                self.progress(stage, min(start + len(part), len(missing)), len(missing))
        return np.stack([np.asarray(found[k], dtype=np.float32) for k in keys])
