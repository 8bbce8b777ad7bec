"""The persistent store folder (shell): its layout, its marker, and wiping only what is ours.

Layout (default ``.retrieval-gate/store``)::

    retrieval-gate-store.json   marker: {"schema": 1}; a non-empty folder without it is refused
    retrieval-gate-store.lock   the writer's lock (``StoreLock``): its pid and command while held
    chroma/                     the Chroma database (one collection per suite: ``rg-<suite>``)
    embeddings.sqlite3          the embedding cache (embed/cache.py)

One writer at a time: an eval holds an exclusive ``fcntl.flock`` on the lock file from before the
folder is checked until the search is done. Another process waits (with a note) up to
``lock_timeout_s``, then stops naming the holder. The kernel drops the lock of a process that
dies — a killed run never leaves a stale lock; the pid in the file is only informative.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import shutil
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval_gate.embed import CACHE_FILE
from retrieval_gate.errors import StoreError
from retrieval_gate.files import write_json_atomic

STORE_SCHEMA = 1
DEFAULT_STORE_DIR = ".retrieval-gate/store"
MARKER = "retrieval-gate-store.json"
CHROMA_DIR = "chroma"
LOCK_FILE = "retrieval-gate-store.lock"
LOCK_POLL_S = 0.2
LOCK_NOTE_EVERY_S = 30.0  # while waiting for the lock: who holds it and the time left, at this interval
LOCK_STAGE = "waiting for the store lock (s)"  # the progress stage of the wait: a live line on a terminal


def prepare_root(root: Path, *, notify: Callable[[str], None]) -> str | None:
    """Check (or create) a store folder; wipe one of another schema. Returns why it was rebuilt,
    or None."""
    if root.exists() and not root.is_dir():
        raise StoreError(f"store path {root} is a file, not a folder")
    marker = root / MARKER
    rebuilt = None
    if root.is_dir() and any(p.name != LOCK_FILE for p in root.iterdir()):
        if not marker.is_file():
            raise StoreError(f"store folder {root} is not empty and is not a retrieval-gate store "
                             f"(no {MARKER}); pass an empty or new folder with --store")
        schema = _marker_schema(marker)
        if schema == STORE_SCHEMA:
            return None
        notify(f"store {root} has schema {schema!r}, this version uses {STORE_SCHEMA}; rebuilding it")
        rebuilt = f"store schema {schema!r}, expected {STORE_SCHEMA}"
        wipe(root, cache_too=True)
    try:
        write_json_atomic(marker, data={"schema": STORE_SCHEMA, "tool": "retrieval-gate"})
    except Exception as exc:
        raise StoreError(f"cannot write to the store folder {root}: {exc}") from None
    return rebuilt


def refuse_unusable(root: Path) -> None:
    """A store folder that is not ours or that this user may not write: exit 2 naming the path
    and the fix, before anything is locked, read or deleted."""
    if root.exists() and not root.is_dir():
        raise StoreError(f"store path {root} is a file, not a folder")
    if not root.is_dir():
        return
    if any(p.name != LOCK_FILE for p in root.iterdir()) and not (root / MARKER).is_file():
        raise StoreError(f"store folder {root} is not empty and is not a retrieval-gate store "
                         f"(no {MARKER}); pass an empty or new folder with --store")
    targets = [root, *(p for p in (root / MARKER, root / LOCK_FILE, root / CHROMA_DIR) if p.exists())]
    chroma = root / CHROMA_DIR
    if chroma.is_dir():
        targets.extend(chroma.iterdir())
    for target in targets:
        wanted = os.R_OK | os.W_OK | (os.X_OK if target.is_dir() else 0)
        if not os.access(target, wanted):
            owner, uid = _owner(target), os.getuid()
            fix = write_advice(root=root, owner=owner, uid=uid, read_only=_read_only(root))
            raise StoreError(f"store {target} is not writable by this user (uid {uid}; it belongs to uid {owner}): "
                             f"{fix}, or pass another --store; nothing was changed")


def write_advice(*, root: Path, owner: int | str, uid: int, read_only: bool) -> str:
    """What makes a store folder this user may not write usable, as the reason is: a file system
    mounted read-only (no owner or mode helps), a folder of this user's own (its mode: ``chmod``),
    or another user's (``chown`` to this user, run by its owner or root)."""
    if read_only:
        return f"{root} is on a file system mounted read-only: copy the store to a writable folder"
    if owner == uid or uid == 0:  # root is refused by no mode but its own files' (immutable, ACL): chmod
        return f"make it writable (chmod -R u+rwX {root})"
    return f"give it to this user (chown -R {uid} {root}, as uid {owner} or root) or make it writable for uid {uid}"


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


HNSW_HEADER_BYTES = 100


def hnsw_damage(chroma: Path) -> str | None:
    """What is wrong with the HNSW files of a persistent Chroma folder, read before chromadb opens
    them (a cut ``data_level0.bin`` makes its index read past the end of the file: a crash no
    handler can catch), or None. ``header.bin`` holds the element count and the bytes per element
    (hnswlib's layout: version u32, then offsetLevel0, max_elements, cur_element_count,
    size_data_per_element as u64); ``data_level0.bin`` must hold whole elements, at least count
    and at most capacity of them, ``length.bin`` (one float32 norm per element) likewise."""
    if not chroma.is_dir():
        return None
    for header in sorted(chroma.glob("*/header.bin")):
        folder = header.parent
        try:
            raw = header.read_bytes()
            if len(raw) != HNSW_HEADER_BYTES:
                return f"{header} is {len(raw)} bytes, not {HNSW_HEADER_BYTES}"
            _version, _offset, capacity, count, per_element = struct.unpack_from("<IQQQQ", raw, 0)
            if not 0 <= count <= capacity or per_element <= 0 or per_element > 1 << 24:
                return f"{header} is damaged (count {count}, capacity {capacity}, element {per_element} bytes)"
            for name, unit in (("data_level0.bin", per_element), ("length.bin", 4)):
                file = folder / name  # holds at least ``count`` elements, at most ``capacity``, whole ones
                size = file.stat().st_size if file.exists() else None
                if size is not None and (size < count * unit or size > capacity * unit or size % unit):
                    return (f"{file} is {size} bytes, not the {count} × {unit} (up to {capacity} × {unit}) "
                            "its header says (cut short?)")
            label_offset, data_offset = struct.unpack_from("<QQ", raw, 36)
            max_m0 = struct.unpack_from("<Q", raw, 68)[0]
            problem = _level0_damage(folder / "data_level0.bin", count=count, per_element=per_element,
                                     data_offset=data_offset, label_offset=label_offset, max_m0=max_m0)
            if problem is not None:
                return problem
        except OSError as exc:
            return f"{header}: {exc.strerror}"
    return None


def _level0_damage(file: Path, *, count: int, per_element: int, data_offset: int, label_offset: int,
                   max_m0: int) -> str | None:
    """The level-0 graph and vectors of an HNSW file, checked where a bad value would crash the
    index: neighbour counts ≤ M0, neighbour ids < count, and every vector finite and unit length
    (cosine space stores normalised vectors)."""
    import numpy as np

    from retrieval_gate.embed.check import bad_rows

    if not file.exists() or count == 0:
        return None
    if not (4 + 4 * max_m0 <= data_offset < label_offset <= per_element - 8) or (label_offset - data_offset) % 4:
        return f"{file.parent / 'header.bin'} is damaged (element layout {data_offset}/{label_offset}/{per_element})"
    rows = np.fromfile(file, dtype=np.uint8, count=count * per_element).reshape(count, per_element)
    links = rows[:, :4 + 4 * max_m0].copy().view(np.uint32)
    degree = links[:, 0] & 0xFFFF
    if (degree > max_m0).any():
        return f"{file} is damaged ({int((degree > max_m0).sum())} neighbour lists longer than {max_m0})"
    neighbours = links[:, 1:]
    used = np.arange(max_m0)[None, :] < degree[:, None]
    if (neighbours[used] >= count).any():
        return f"{file} is damaged (neighbour ids beyond the {count} elements)"
    vectors = rows[:, data_offset:label_offset].copy().view(np.float32)
    bad = int(bad_rows(vectors).sum())
    if bad:
        return f"{file}: {bad} of {count} vectors failed the check (finite, unit norm)"
    return None


def _owner(path: Path) -> int | str:
    try:
        return path.stat().st_uid
    except OSError:
        return "?"


class StoreLock:
    """The exclusive writer's lock on a store folder (see the module docstring)."""

    def __init__(self, root: Path, *, timeout_s: float, notify: Callable[[str], None],
                 progress: Callable[[str, int, int], None] | None = None):
        self.path = root / LOCK_FILE
        self._held = False  # only a holder rewrites or clears the record; a waiter that gives up touches nothing
        try:
            root.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise StoreError(f"cannot lock the store folder {root}: {exc.strerror} ({self.path})") from None
        try:
            self._acquire(root, timeout_s=timeout_s, notify=notify, progress=progress)
        except BaseException:
            self.release()
            raise

    def _acquire(self, root: Path, *, timeout_s: float, notify: Callable[[str], None],
                 progress: Callable[[str, int, int], None] | None) -> None:
        """Take the lock, waiting at most ``timeout_s``; while waiting, a note naming the holder
        and the time left at once and then every ``LOCK_NOTE_EVERY_S`` seconds (a CI log shows a
        wait is a wait, not a hang), and each second a ``LOCK_STAGE`` progress step (seconds
        waited of ``timeout_s``: the live line a terminal shows)."""
        assert self._fd is not None
        start = time.monotonic()
        deadline = start + timeout_s
        next_note = start
        shown_s = -1
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = self.holder()
                now = time.monotonic()
                if now >= deadline:
                    raise StoreError(f"store {root} is in use by {holder} for more than {timeout_s:g} s (one "
                                     "writer per store): wait for it to finish, or pass another --store") from None
                if now >= next_note:
                    if next_note == start:
                        notify(f"store {root} is in use by {holder}; waiting up to {timeout_s:g} s")
                    else:
                        notify(f"store {root}: still waiting for {holder}, {deadline - now:.0f} s left "
                               f"of {timeout_s:g} s")
                    next_note += LOCK_NOTE_EVERY_S
                if progress is not None and int(now - start) != shown_s:
                    shown_s = int(now - start)
                    progress(LOCK_STAGE, shown_s, math.ceil(timeout_s))
                time.sleep(min(LOCK_POLL_S, max(0.0, deadline - time.monotonic())))
        self._held = True
        record = json.dumps({"pid": os.getpid(), "command": " ".join(sys.argv)[:500]}, sort_keys=True) + "\n"
        with contextlib.suppress(OSError):  # informative only: the lock itself is the flock
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, record.encode("utf-8"), 0)

    def holder(self) -> str:
        """``pid N (command)`` as the holder wrote it, or ``another process``."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return f"pid {int(data['pid'])} ({str(data.get('command', ''))[:200]})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def __del__(self) -> None:  # a store dropped without close() (a library caller) frees its folder
        self.release()

    def release(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        held, self._held = getattr(self, "_held", False), False
        if fd is not None:
            if held:  # the record is the holder's: a waiter that never got the lock leaves it alone
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor releases the flock (a waiter's: nothing)


def wipe(root: Path, *, cache_too: bool) -> None:
    """Remove only what this tool puts in a store folder."""
    _forget_systems()
    shutil.rmtree(root / CHROMA_DIR, ignore_errors=True)
    if cache_too:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{root / CACHE_FILE}{suffix}").unlink(missing_ok=True)


def _marker_schema(marker: Path) -> Any:
    try:
        return json.loads(marker.read_text(encoding="utf-8")).get("schema")
    except (OSError, ValueError, AttributeError):
        return "unreadable"


def _forget_systems() -> None:
    """Drop Chroma's per-process cache of open databases (needed before wiping one); with chromadb
    not imported there is none."""
    if "chromadb" not in sys.modules:
        return
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:  # an older/newer layout: nothing cached to drop
        pass
