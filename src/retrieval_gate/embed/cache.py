"""Content-addressed embedding cache, for passages and queries.

Key = (space, sha256(text)) with ``space = f"{model files sha256}:{document|query}"``: a vector
is reused exactly when the same model files embedded the same text the same way. Chunking needs
no key of its own — it is part of the text: a passage unchanged by a new chunk size is reused, a
changed one gets a new key. Nothing is ever evicted; delete the file to reclaim space.

Storage: one SQLite file (``embeddings.sqlite3`` in the store folder; float32 blobs, each with a
CRC-32 of its bytes beside it) or memory (``--ephemeral``). A file that is unreadable or of
another schema (schema 1 stored no checksums) is replaced, with a note: its vectors are never
used unchecked.

Every vector read back passes ``embed/check.py`` (checksum, dimension, finite, unit norm); one
that fails is deleted from the file and reported missing, so it is embedded again — one note per
read names how many entries were bad.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.embed.base import Embedder, ModelIdentity
from retrieval_gate.embed.check import bad_rows, checksum, common_length
from retrieval_gate.errors import EmbedderError, StoreError
from retrieval_gate.files import sha256_bytes

CACHE_SCHEMA = "2"
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
        self.evicted = 0  # entries that failed the read-back check (and were deleted)
        if self.path is not None:
            self._conn = self._open(self.path)

    # -- opening -------------------------------------------------------------------------------
    def _open(self, path: Path) -> sqlite3.Connection:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the cache folder {path.parent}: {exc.strerror}") from None
        _refuse_unwritable(path)
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
                     "vec BLOB NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (space, key)) WITHOUT ROWID")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (CACHE_SCHEMA,))

    # -- access --------------------------------------------------------------------------------
    def get_many(self, space: str, keys: Iterable[str], *, dim: int | None = None) -> dict[str, np.ndarray]:
        """The cached vectors of ``keys`` that pass the check (``embed/check.py``; ``dim``: the
        expected dimension, else the most common one read). The others are deleted and left out."""
        keys = list(dict.fromkeys(keys))
        if self._conn is None:
            return {k: self._memory[(space, k)] for k in keys if (space, k) in self._memory}
        good, bad = _checked(self._select("key, vec, crc", space, keys), dim=dim)
        if bad:
            self._evict(space, bad)
        return good

    def missing(self, space: str, keys: Iterable[str]) -> list[str]:
        """The keys with no row in ``space`` (present rows are not read or checked here:
        ``get_many`` checks what it reads)."""
        keys = list(dict.fromkeys(keys))
        if self._conn is None:
            return [k for k in keys if (space, k) not in self._memory]
        present = {k for (k,) in self._select("key", space, keys)}
        return [k for k in keys if k not in present]

    def _select(self, columns: str, space: str, keys: Sequence[str]) -> list[tuple[Any, ...]]:
        """``columns`` of the rows of ``keys`` in ``space``, asked in slices of ``_SQL_VARS`` keys."""
        assert self._conn is not None
        rows: list[tuple[Any, ...]] = []
        try:
            for i in range(0, len(keys), _SQL_VARS):
                part = keys[i:i + _SQL_VARS]
                marks = ",".join("?" * len(part))
                rows.extend(self._conn.execute(
                    f"SELECT {columns} FROM vectors WHERE space=? AND key IN ({marks})", (space, *part)))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"embedding cache {self.path} failed: {exc}") from None
        return rows

    def _evict(self, space: str, keys: Sequence[str]) -> None:
        self.evicted += len(keys)
        self._notify(f"embedding cache {self.path}: {len(keys)} entr{'y' if len(keys) == 1 else 'ies'} failed the "
                     "check (checksum, dimension, finite, unit norm); evicted, embedding them again")
        assert self._conn is not None
        try:
            self._conn.execute("BEGIN")
            self._conn.executemany("DELETE FROM vectors WHERE space=? AND key=?", [(space, k) for k in keys])
            self._conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise StoreError(f"embedding cache {self.path} failed: {exc}") from None

    def put_many(self, space: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        if self._conn is None:
            for key, vec in items:
                self._memory[(space, key)] = np.asarray(vec, dtype=np.float32).copy()
            return
        blobs = [(key, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for key, vec in items]
        rows = [(space, key, blob, checksum(blob)) for key, blob in blobs]
        try:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
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
        self._dim: int | None = None  # the model's dimension, once a vector has been made

    def identity(self) -> ModelIdentity:
        if self._identity is None:
            self._identity = self.inner.identity()
        return self._identity

    def space(self, kind: str) -> str:
        return f"{self.identity().sha256}:{kind}"

    def load_ahead_for(self, texts: Sequence[str]) -> None:
        """When some of these passages are not in the cache, let the model start loading now, on
        a second thread, where it can (``OnnxEmbedder.load_ahead``): a run whose texts are all
        cached still loads nothing."""
        start = getattr(self.inner, "load_ahead", None)
        if start is not None and self.cache.missing(self.space("document"),
                                                    (sha256_bytes(t.encode("utf-8")) for t in texts)):
            start()

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
        found = self.cache.get_many(space, first_text, dim=self._dim)
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
            _check_fresh(vectors)
            self._dim = int(vectors.shape[1]) if vectors.ndim == 2 else self._dim
            self.cache.put_many(space, list(zip(part, vectors, strict=True)))
            found.update(zip(part, vectors, strict=True))
            if self.progress is not None:
                self.progress(stage, min(start + len(part), len(missing)), len(missing))
        out = [np.asarray(found[k], dtype=np.float32) for k in keys]
        if len({len(v) for v in out}) > 1:
            raise EmbedderError(f"vectors of different dimensions for one model ({sorted({len(v) for v in out})})")
        return np.stack(out)


def _checked(rows: Sequence[tuple[str, bytes, int]], *, dim: int | None) -> tuple[dict[str, np.ndarray], list[str]]:
    """Rows read from the file → (the vectors that pass the check, the keys of those that fail)."""
    want = dim if dim is not None else common_length(len(blob) // 4 for _k, blob, _c in rows if len(blob) % 4 == 0)
    size = 4 * (want or 0)
    bad: list[str] = []
    kept: list[tuple[str, bytes]] = []
    for key, blob, crc in rows:
        if not isinstance(blob, bytes) or not size or len(blob) != size or checksum(blob) != crc:
            bad.append(key)
        else:
            kept.append((key, blob))
    if not kept:
        return {}, bad
    matrix = np.frombuffer(b"".join(blob for _k, blob in kept), dtype=np.float32).reshape(len(kept), -1)
    failed = bad_rows(matrix)
    good = {key: matrix[i] for i, (key, _b) in enumerate(kept) if not failed[i]}
    bad.extend(key for i, (key, _b) in enumerate(kept) if failed[i])
    return good, bad


def _check_fresh(vectors: np.ndarray) -> None:
    """What the model just made obeys the contract the cache checks on the way back."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbedderError(f"the embedder returned an array of shape {matrix.shape}, not (texts, dim)")
    wrong = int(bad_rows(matrix).sum())
    if wrong:
        raise EmbedderError(f"the embedder returned {wrong} vector(s) that are not finite unit vectors "
                            "(an embedder must give L2-normalised rows)")


def _refuse_unwritable(path: Path) -> None:
    """A cache file (or its folder) this process may not write: exit 2 naming it, nothing deleted."""
    for target in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if target.exists() and not os.access(target, os.R_OK | os.W_OK):
            raise StoreError(f"embedding cache {target} is not readable and writable by this user "
                             f"(uid {os.getuid()}); fix its owner or mode (chown/chmod), or use another --store")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write in the cache folder {path.parent} (uid {os.getuid()}); "
                         "fix its owner or mode (chown/chmod), or use another --store")
