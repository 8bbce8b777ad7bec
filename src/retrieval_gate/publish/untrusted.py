"""Reading files in the privileged modes (``comment``, ``write-baseline``), and keeping secrets out
of everything the action posts or writes.

A file named by an input in those modes may come from another run's artifact (a fork controls
what its run wrote) or from the workspace, so it is read only when it is

- a **regular file** — the last path component is opened with ``O_NOFOLLOW`` (a symlink is
  refused, never followed) and checked with ``fstat``;
- **inside the workspace** after resolution — ``realpath`` of the path must lie under the
  resolved workspace, and the file opened must be the file found there (same device and inode),
  so a symlinked folder cannot lead out of it either;
- **at most a size cap** (below): read up to the cap plus one byte, refused beyond.

Caps (bytes): results 32 MiB, comparison 16 MiB, the base's config file 1 MiB (GitHub's event
payload: 25 MiB, its own webhook payload limit, ``forge.event``).
"""

from __future__ import annotations

import base64
import errno
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.files import ReadRefused, read_bounded

MIB = 1024 * 1024
RESULTS_MAX_BYTES = 32 * MIB
COMPARISON_MAX_BYTES = 16 * MIB
CONFIG_MAX_BYTES = 1 * MIB

REDACTED = "***"
MIN_SECRET_CHARS = 8  # shorter runner values (ACTIONS_STEP_DEBUG=true) are flags, not secrets


def read_confined(path: str | Path, *, workspace: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of ``path`` (relative to ``workspace`` unless absolute), read as the module
    docstring says; any refusal is an InputError naming the path."""
    shown = str(path)
    root = Path(os.path.realpath(workspace))
    full = Path(path) if Path(path).is_absolute() else root / path
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(full, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(Problem(shown, None, f"{what}: refused, it is a symbolic link")) from None
        if exc.errno == errno.ENOENT:
            raise InputError(Problem(shown, None, f"{what}: file not found")) from None
        raise InputError(Problem(shown, None, f"{what}: cannot read: {exc.strerror}")) from None
    real = Path(os.path.realpath(full))
    if real != root and root not in real.parents:
        os.close(fd)
        raise InputError(Problem(shown, None, f"{what}: refused, it resolves outside the workspace {root}"))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(Problem(shown, None, f"{what}: refused, not a regular file"))
        try:
            there = os.stat(real)
        except OSError:
            there = None
        if there is None or (there.st_dev, there.st_ino) != (info.st_dev, info.st_ino):
            raise InputError(Problem(shown, None, f"{what}: refused, the file changed while it was opened"))
        if info.st_size > max_bytes:
            raise InputError(Problem(shown, None, f"{what}: refused, {info.st_size} bytes is over the "
                                                  f"{max_bytes} byte cap"))
        try:
            return read_bounded(fd, max_bytes=max_bytes)
        except ReadRefused:
            raise InputError(Problem(shown, None, f"{what}: refused, over the {max_bytes} byte cap")) from None
    finally:
        os.close(fd)


def secret_forms(secret: str) -> list[str]:
    """How a secret can appear in text we write: as is, JSON-escaped, base64 (a Basic auth header)."""
    forms = [secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1],
             base64.b64encode(secret.encode()).decode()]
    return list(dict.fromkeys(form for form in forms if form))


def scrub_text(text: str, *, secrets: Iterable[str]) -> str:
    """``text`` with every secret (in each form of :func:`secret_forms`) replaced by ***."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for form in secret_forms(secret):
            text = text.replace(form, REDACTED)
    return text


def confine_paths(*, workspace: Path, paths: Mapping[str, str | None]) -> None:
    """Every path the action reads or writes must stay inside the workspace once resolved
    (``..`` and symlinks followed): ``out_dir: ../../x`` or a ``kb`` symlinked to ``/etc`` is a
    usage error (exit 2) before anything is read or written. Relative paths are taken from the
    workspace (the working directory of the action)."""
    root = os.path.realpath(workspace)
    for name, raw in paths.items():
        if raw is None:
            continue
        resolved = os.path.realpath(os.path.join(root, raw))
        if resolved != root and not resolved.startswith(root.rstrip(os.sep) + os.sep):
            raise UsageError(f"{name} {raw[:80]!r} resolves to {resolved[:120]}, outside the workspace {root}: "
                             "every path of the action must stay inside it")
