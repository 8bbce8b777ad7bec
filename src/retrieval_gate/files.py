"""File adapter: atomic writes, stable JSON, baselines, content hashes, the one bounded read. The
only module that writes files for the core (stores and caches have their own adapters)."""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:  # the C encoder; absent under a bare system Python (the store folder's check), where json writes the same
    import orjson
except ImportError:
    orjson = None

from retrieval_gate.errors import OutputError, Problem


def dumps_json(data: Any) -> str:
    """Stable JSON: sorted keys, two-space indent, UTF-8 kept, trailing newline.

    Written by orjson (C; the standard library's encoder is pure Python once indented), byte for
    byte as ``json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)``
    writes it: ``_for_orjson`` checks every value first — a NaN or infinity raises the same
    ValueError, and the floats orjson spells differently (0 < |x| < 1e-4: ``1e-05``, not
    ``0.00001``) are passed pre-written. Data orjson cannot take as is (keys that are not
    strings, integers beyond 64 bits, other types) goes to ``json.dumps``, which handles or
    refuses it as before. Without orjson installed, the standard library writes it all."""
    if orjson is None:
        return _standard(data)
    try:
        ready = _for_orjson(data)
    except _NotPlain:
        return _standard(data)
    try:
        options = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
        return orjson.dumps(ready, option=options).decode()
    except orjson.JSONEncodeError:  # e.g. nested deeper than orjson's 255 levels
        return _standard(data)


def _standard(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


class _NotPlain(Exception):
    """A value orjson would write differently from ``json.dumps`` (or not at all)."""


_INT64 = (-(2**63), 2**64 - 1)


def _for_orjson(value: Any) -> Any:
    """``value`` with every float orjson would spell differently replaced by its ``repr`` as an
    ``orjson.Fragment`` (a new container only where something was replaced); ValueError for a
    non-finite float, as ``json.dumps(allow_nan=False)``; ``_NotPlain`` for anything else.

    Leaves (most of a results file: score dicts, id lists) are checked inline in the container's
    loop, without a call each."""
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        out: Any = None  # a copy, made only when an item changes
        for key, item in (value.items() if kind is dict else enumerate(value)):
            if kind is dict and type(key) is not str:
                raise _NotPlain
            leaf = type(item)
            if leaf is str or leaf is bool or item is None:
                continue
            if leaf is float and item - item == 0.0 and not (item and -1e-4 < item < 1e-4):
                continue  # a finite float orjson writes as json.dumps does
            if leaf is int and _INT64[0] <= item <= _INT64[1]:
                continue
            new = _for_orjson(item)
            if new is not item:
                if out is None:
                    out = dict(value) if kind is dict else list(value)
                out[key] = new
        return value if out is None else out
    if kind is str or kind is bool or value is None:
        return value
    if kind is float:
        if value - value != 0.0:  # NaN or ±inf
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        if value and -1e-4 < value < 1e-4:
            return orjson.Fragment(repr(value))
        return value
    if kind is int:
        if not _INT64[0] <= value <= _INT64[1]:
            raise _NotPlain
        return value
    raise _NotPlain


def write_text_atomic(path: Path, *, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename, so a
    reader never sees half a file and a crash never leaves one.

    Only a regular file or a missing path is written (``write_target``): a device, FIFO, socket or
    folder at ``path`` is refused, never replaced; a symbolic link to a regular file is written
    through (the file it points to is replaced, the link kept); any other link is refused."""
    write_chunks_atomic(path, chunks=(text,))


def write_chunks_atomic(path: Path, *, chunks: Iterable[str]) -> None:
    """``write_text_atomic`` of the text ``chunks`` make, written as they come (a large file is
    never one string in memory). Should the chunks raise (a file they read could not be read),
    the temporary file goes and ``path`` is left as it was."""
    path = write_target(Path(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(Problem(str(path), None, f"cannot write: {exc.strerror}")) from None
    try:
        _hold(fd)  # while this writer lives its temp file is locked: no cleaner takes it for stale
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(Problem(str(path), None, f"cannot write: {exc.strerror}")) from None
        raise


def write_target(path: Path) -> Path:
    """The file a write of ``path`` replaces: ``path`` itself when missing or a regular file; the
    file a symbolic link points to when that is a regular file; an OutputError otherwise."""
    try:
        info = os.lstat(path)
    except OSError:  # missing (or unreachable: the write itself says why)
        return path
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            raise OutputError(Problem(str(path), None, f"cannot write: refused, a symbolic link to "
                                                       f"{os.readlink(path)}, which does not exist")) from None
        if not stat.S_ISREG(target.st_mode):
            raise OutputError(Problem(str(path), None, f"cannot write: refused, a symbolic link to "
                                                       f"{os.readlink(path)}, which is not a regular file"))
        return Path(os.path.realpath(path))
    if not stat.S_ISREG(info.st_mode):
        kind = ("a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode)
                or stat.S_ISBLK(info.st_mode) else "not a regular file")
        raise OutputError(Problem(str(path), None, f"cannot write: refused, it is {kind}, not a regular file "
                                                   "(only a regular file is replaced)"))
    return path


STALE_AFTER_S = 5.0  # a temp file this old that no writer holds was left by a killed run


def _hold(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def remove_stale_temps(path: Path) -> int:
    """Remove the ``.<name>.*.tmp`` files a killed writer of ``path`` left beside it: those no
    live writer holds (each writer locks its own temp file) and older than ``STALE_AFTER_S``
    (the instant between a temp file's creation and its lock). Returns how many went."""
    removed = 0
    for tmp in Path(path).parent.glob(f".{glob_escape(Path(path).name)}.*.tmp"):
        try:
            if time.time() - tmp.stat().st_mtime < STALE_AFTER_S:
                continue
            fd = os.open(tmp, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live writer holds it
            os.close(fd)
            continue
        try:
            tmp.unlink()
            removed += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def glob_escape(name: str) -> str:
    return glob.escape(name)


def _mode_for(path: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual 0666 minus the umask
    (``mkstemp`` alone would leave 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class ReadRefused(Exception):
    """A bounded read refused a file: ``reason`` in words (the caller names the file in its own
    named error); ``missing``: the file is not there."""

    def __init__(self, reason: str, *, missing: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.missing = missing


def read_bounded(source: Path | int, *, max_bytes: int) -> bytes:
    """The whole of a file (a path, or a file descriptor opened by the caller, left open), read
    once and never more than ``max_bytes`` + 1 bytes (a pipe or ``<(…)`` works like a file); a
    longer file, an absent one, a folder or a read error raise ``ReadRefused``. Every capped
    read of the tool is this one."""
    if isinstance(source, int):
        return _read_fd(source, max_bytes=max_bytes)
    try:
        with open(source, "rb") as handle:
            return _read_fd(handle.fileno(), max_bytes=max_bytes)
    except FileNotFoundError:
        raise ReadRefused("file not found", missing=True) from None
    except IsADirectoryError:
        raise ReadRefused("is a directory, expected a file") from None
    except OSError as exc:
        raise ReadRefused(f"cannot read: {exc.strerror}") from None


def _read_fd(fd: int, *, max_bytes: int) -> bytes:
    chunks, total = [], 0
    while total <= max_bytes:
        chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > max_bytes:
        raise ReadRefused(f"larger than {max_bytes:,} bytes")
    return b"".join(chunks)


def decode_text(raw: bytes) -> str:
    """UTF-8 text (a leading byte-order mark dropped), or ``ReadRefused`` naming the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadRefused(f"invalid UTF-8 at byte {exc.start + 1}") from None


def write_json_atomic(path: Path, *, data: Any) -> None:
    write_text_atomic(path, text=dumps_json(data))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_path(path: Path) -> str:
    """Content hash of a file, or of a folder (relative names and contents of its files)."""
    path = Path(path)
    if path.is_file():
        return sha256_bytes(path.read_bytes())
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p, path)):
        rel = file.relative_to(path).as_posix()
        digest.update(os.fsencode(rel) + b"\0" + hashlib.sha256(file.read_bytes()).digest())  # any file name
    return digest.hexdigest()


def _hidden(file: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in file.relative_to(root).parts)


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``fcntl.flock`` on ``folder`` for read-merge-write updates of a file in it
    (``baseline update``): concurrent updates on one machine take turns, so none loses the
    others' history entries. The folder, not the file, is locked: the file is replaced by an
    atomic rename (a lock on its old inode would not hold) and may not exist yet. The lock is
    released when the block ends, also on error; it leaves nothing behind."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)
    except OSError as exc:
        raise OutputError(Problem(str(folder), None, f"cannot lock the folder: {exc.strerror}")) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def repository_root(path: Path) -> Path:
    """The repository a path lies in: the nearest folder above it (as written, links not
    followed) that holds ``.git``; else the folder the path is in."""
    start = Path(os.path.abspath(path))
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start.parent


def from_root(path: Path, root: Path) -> str:
    """``path`` as written from the repository root (POSIX separators), or absolute when outside it."""
    full = Path(os.path.abspath(path))
    return full.relative_to(root).as_posix() if full == root or root in full.parents else str(full)


def confined(path: Path, *, root: Path | None = None) -> Path:
    """``path``, refused (OutputError, nothing written) when it resolves outside ``root`` (default:
    its ``repository_root``) — through ``..`` or a symbolic link, the file's own or a folder's on
    the way (a committed ``cases.not-relevant.jsonl -> ../outside/…``)."""
    base = Path(os.path.realpath(root if root is not None else repository_root(path)))
    real = Path(os.path.realpath(path))
    if real != base and base not in real.parents:
        raise OutputError(Problem(str(path), None, f"cannot write: refused, it resolves to {real}, outside the "
                                                   f"repository {base} (a symbolic link on the way?)"))
    return path
