"""The store adapters' query cache (``retrieve.stores``): the embedding cache file of the suite's
store folder, taken as ``store.chroma.ChromaStore`` takes it (refused when it is no store folder,
locked, prepared) — without the store itself: a store adapter never opens retrieval-gate's own
Chroma collection, so chromadb is not imported for it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from retrieval_gate.embed import CACHE_FILE
from retrieval_gate.store.folder import DEFAULT_STORE_DIR, StoreLock, prepare_root, refuse_unusable
from retrieval_gate.store.settings import StoreSettings


class QueryCacheFolder:
    def __init__(self, settings: StoreSettings, *, notify: Callable[[str], None],
                 progress: Callable[[str, int, int], None] | None = None):
        self.root = None if settings.mode == "ephemeral" else Path(settings.path or DEFAULT_STORE_DIR)
        self._lock: StoreLock | None = None
        if self.root is not None:
            refuse_unusable(self.root)
            self._lock = StoreLock(self.root, timeout_s=settings.lock_timeout_s, notify=notify, progress=progress)
            try:
                prepare_root(self.root, notify=notify)
            except BaseException:
                self.close()
                raise

    @property
    def cache_file(self) -> Path | None:
        """The cache's file (None: ephemeral, the cache lives in memory)."""
        return self.root / CACHE_FILE if self.root is not None else None

    def close(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()
