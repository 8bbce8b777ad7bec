"""File adapter: atomic writes, stable JSON, baselines, content hashes. The only module that
writes files for the core (stores and caches have their own adapters)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_gate.errors import InputError, Problem

if TYPE_CHECKING:
    from retrieval_gate.compare.model import Baseline


def dumps_json(data: Any) -> str:
    """Stable JSON: sorted keys, two-space indent, UTF-8 kept, trailing newline."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename, so a
    reader never sees half a file and a crash never leaves one."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(Problem(str(path), None, f"cannot write: {exc.strerror}")) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(Problem(str(path), None, f"cannot write: {exc.strerror}")) from None
        raise


def _mode_for(path: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual 0666 minus the umask
    (``mkstemp`` alone would leave 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, dumps_json(data))


def write_baseline(path: Path, baseline: Baseline) -> None:
    """A baseline in its stable text form (``compare.baseline_codec.dumps_baseline``), atomically."""
    from retrieval_gate.compare.baseline_codec import dumps_baseline

    write_text_atomic(Path(path), dumps_baseline(baseline))


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
        digest.update(rel.encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def _hidden(file: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in file.relative_to(root).parts)
