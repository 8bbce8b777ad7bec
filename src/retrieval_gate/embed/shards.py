"""Sharded embedding: N machines each embed a deterministic 1/N of the texts into a shard folder,
and the eval fills its cache from those folders and embeds nothing they hold.

A shard folder holds ``embeddings.sqlite3`` — an embedding cache in the very format of
``embed.cache`` (same spaces and keys: model files hash, document/query, sha256 of the text) —
and ``shard.json``, a manifest saying which shard of what it is.

Which texts a shard embeds: the distinct texts of a kind (passages, queries), longest first and
ties by key — the order ``CachedEmbedder`` embeds them in — cut into slices of ``SLICE_SIZE``;
shard ``i`` of ``n`` takes slices ``i-1, i-1+n, i-1+2n, …``. Round robin over length-ordered
slices gives every shard a similar share of long and short texts (similar time), and each slice
reaches the model exactly as it would in a single process, so the vectors are the same bits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.embed import CACHE_FILE
from retrieval_gate.embed.cache import CACHE_SCHEMA, SLICE_SIZE, EmbeddingCache
from retrieval_gate.embed.check import checksum, vector_ok
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.files import sha256_bytes, write_json_atomic

MANIFEST_FILE = "shard.json"
_ROWS_PER_PUT = 2_000


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` → ``(I, N)`` with 1 ≤ I ≤ N."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: expected I/N with 1 ≤ I ≤ N (e.g. 2/4)")
    return i, n


def shard_texts(texts: Iterable[str], *, index: int, count: int, slice_size: int = SLICE_SIZE) -> list[str]:
    """The distinct texts shard ``index`` of ``count`` embeds (see the module docstring)."""
    by_key = {sha256_bytes(t.encode("utf-8")): t for t in texts}
    ordered = sorted(by_key, key=lambda k: (-len(by_key[k]), k))
    out: list[str] = []
    for number, start in enumerate(range(0, len(ordered), slice_size)):
        if number % count == index - 1:
            out.extend(by_key[k] for k in ordered[start:start + slice_size])
    return out


def write_manifest(folder: Path, data: dict[str, Any]) -> None:
    write_json_atomic(folder / MANIFEST_FILE, data=data)


def shard_folders(paths: Sequence[Path]) -> list[Path]:
    """Each ``--cache-from`` path as shard folders: a folder holding ``embeddings.sqlite3``, or a
    folder whose sub-folders do (a downloaded set of artifacts), in name order."""
    out: list[Path] = []
    for path in paths:
        path = Path(path)
        if (path / CACHE_FILE).is_file():
            out.append(path)
            continue
        found = sorted(p for p in path.iterdir() if (p / CACHE_FILE).is_file()) if path.is_dir() else []
        if not found:
            raise InputError(Problem(str(path), None, f"not a shard folder: no {CACHE_FILE} in it or in its "
                                                      "sub-folders (written by `retrieval-gate embed --out`)"))
        out.extend(found)
    return out


@dataclass
class ImportReport:
    """What ``--cache-from`` brought in: vectors of this model per shard, and the others."""

    folders: list[str] = field(default_factory=list)
    imported: int = 0  # vectors of the spaces this eval uses
    other: int = 0  # vectors of other models or devices (left out)
    bad: int = 0  # vectors that failed the read-back check (left out: embedded again if needed)

    def as_extras(self) -> dict[str, Any]:
        out = {"folders": len(self.folders), "imported": self.imported, "other_spaces": self.other}
        return {**out, "failed_check": self.bad} if self.bad else out


def import_shards(cache: EmbeddingCache, paths: Sequence[Path], *, spaces: Iterable[str]) -> ImportReport:
    """Copy every vector of ``spaces`` from the shard folders into ``cache``. Shard files are only
    read (opened read-only); one that is not an embedding cache is an InputError naming it."""
    wanted = set(spaces)
    report = ImportReport()
    for folder in shard_folders(paths):
        file = folder / CACHE_FILE
        report.folders.append(str(folder))
        try:
            conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        except sqlite3.DatabaseError as exc:
            raise InputError(Problem(str(file), None, f"cannot open the shard's cache: {exc}")) from None
        try:
            _check_schema(conn, file)
            rows = conn.execute("SELECT space, key, vec, crc FROM vectors ORDER BY space, key")
            batch: dict[str, list[tuple[str, Any]]] = {}
            held = 0
            for space, key, blob, crc in rows:
                if space not in wanted:
                    report.other += 1
                    continue
                if not isinstance(blob, bytes) or checksum(blob) != crc or not vector_ok(_vector(blob), dim=None):
                    report.bad += 1
                    continue
                batch.setdefault(space, []).append((key, _vector(blob)))
                held += 1
                if held >= _ROWS_PER_PUT:
                    _flush(cache, batch)
                    report.imported += held
                    batch, held = {}, 0
            _flush(cache, batch)
            report.imported += held
        except sqlite3.DatabaseError as exc:
            raise InputError(Problem(str(file), None, f"unreadable shard cache: {exc}")) from None
        finally:
            conn.close()
    return report


def _check_schema(conn: sqlite3.Connection, file: Path) -> None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() if "meta" in tables else None
    if not {"meta", "vectors"} <= tables or row is None or row[0] != CACHE_SCHEMA:
        raise InputError(Problem(str(file), None, f"not an embedding cache of schema {CACHE_SCHEMA} "
                                                  f"({'schema ' + str(row[0]) if row else 'no schema'})"))


def _vector(blob: bytes) -> Any:
    return np.frombuffer(blob, dtype=np.float32)


def _flush(cache: EmbeddingCache, batch: dict[str, list[tuple[str, Any]]]) -> None:
    for space, items in batch.items():
        cache.put_many(space, items)
