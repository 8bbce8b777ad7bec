"""The persistent store folder (shell): its layout, its marker, and wiping only what is ours.

Layout (default ``.retrieval-gate/store``)::

    retrieval-gate-store.json   marker: {"schema": 1}; a non-empty folder without it is refused
    chroma/                     the Chroma database (one collection per suite: ``rg-<suite>``)
    embeddings.sqlite3          the embedding cache (embed/cache.py)
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval_gate.embed.cache import CACHE_FILE
from retrieval_gate.errors import StoreError
from retrieval_gate.files import write_json_atomic

STORE_SCHEMA = 1
DEFAULT_STORE_DIR = ".retrieval-gate/store"
MARKER = "retrieval-gate-store.json"
CHROMA_DIR = "chroma"


def prepare_root(root: Path, *, notify: Callable[[str], None]) -> str | None:
    """Check (or create) a store folder; wipe one of another schema. Returns why it was rebuilt,
    or None."""
    if root.exists() and not root.is_dir():
        raise StoreError(f"store path {root} is a file, not a folder")
    marker = root / MARKER
    rebuilt = None
    if root.is_dir() and any(root.iterdir()):
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
        write_json_atomic(marker, {"schema": STORE_SCHEMA, "tool": "retrieval-gate"})
    except Exception as exc:
        raise StoreError(f"cannot write to the store folder {root}: {exc}") from None
    return rebuilt


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
    """Drop Chroma's per-process cache of open databases (needed before wiping one)."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:  # an older/newer layout: nothing cached to drop
        pass
