"""What counts as a failure of the Chroma store, and holding back the Rust panic text."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


def is_store_failure(exc: BaseException) -> bool:
    """What chromadb can raise: any ``Exception``, and the ``PanicException`` of its Rust core
    (a ``BaseException``; pyo3 does not register its module, so it is known by name)."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


@contextlib.contextmanager
def rust_panics_quiet() -> Iterator[None]:
    """Hold back what is written to the process's stderr (fd 2) inside the block: a panic of
    chromadb's Rust core prints its own block there before Python sees the exception. Text
    without a panic in it is passed on afterwards; a panic's block is dropped (the store's
    note and error name the panic in one line)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        held = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below, after the block
    except (OSError, ValueError):  # no usable fd 2 (embedded use): nothing to hold back
        yield
        return
    try:
        os.dup2(held.fileno(), 2)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        held.seek(0)
        text = held.read().decode("utf-8", "replace")
        held.close()
        if text and "panicked at" not in text:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(text)
                sys.stderr.flush()
