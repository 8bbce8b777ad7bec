"""``chroma:COLLECTION`` — a team's Chroma collection, on a server (options ``host``, ``port``: what
``chroma run`` serves) or in a persistent folder (option ``path``), read only (``retrieve.stores``).

Scores are cosine similarities whatever the collection's space: ``1 − d`` for ``cosine`` and
``ip`` (of unit vectors), ``1 − d/2`` for ``l2`` (Chroma's squared distance between unit vectors)."""

from __future__ import annotations

from typing import Any

import numpy as np

from retrieval_gate.errors import RetrieverError, one_line
from retrieval_gate.load import boundary
from retrieval_gate.retrieve.settings import ID_KEY_OPTION, StoreAdapterSettings
from retrieval_gate.retrieve.stores import Row, card_of, lookup

DEFAULT_PORT = 8000


class ChromaClient:
    def __init__(self, collection: str, *, settings: StoreAdapterSettings):
        self.collection_name = collection
        self.settings = settings
        self.label = f"chroma:{collection}"
        self.id_key = settings.id_key
        self.id_option = ID_KEY_OPTION
        self.id_label = f"metadata key {settings.id_key!r}" if settings.id_key else "id"
        if settings.path is not None and (settings.host is not None or settings.port is not None):
            raise RetrieverError(f"{self.label}: give either options.path (a persistent folder) or options.host/port "
                                 "(a server), not both")
        if settings.url is not None or settings.dsn is not None:
            raise RetrieverError(f"{self.label}: options.url and options.dsn are not Chroma's; "
                                 "use host and port, or path")
        self._where = (f"folder {settings.path}" if settings.path is not None
                       else f"server {settings.host or 'localhost'}:{settings.port or DEFAULT_PORT}")
        self._client = self._connect()
        try:
            self._collection = self._open()
        except BaseException:
            self.close()
            raise
        self._space = self._distance_space()
        self._dim: int | None = None

    def _connect(self) -> Any:
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError:
            raise RetrieverError(f"{self.label} needs chromadb (pip install chromadb)") from None
        settings = Settings(anonymized_telemetry=False,
                            chroma_query_request_timeout_seconds=int(max(1, self.settings.store_timeout_s)))
        try:
            if self.settings.path is not None:
                from pathlib import Path

                if not Path(self.settings.path).is_dir():
                    raise RetrieverError(f"{self.label}: options.path {self.settings.path} is not a folder")
                return chromadb.PersistentClient(path=self.settings.path, settings=settings)
            client = chromadb.HttpClient(host=self.settings.host or "localhost",
                                         port=self.settings.port or DEFAULT_PORT, settings=settings)
            client.heartbeat()
            return client
        except RetrieverError:
            raise
        except Exception as exc:
            raise RetrieverError(f"{self.label}: cannot open the Chroma {self._where}: "
                                 f"{boundary.clip(one_line(exc))}") from None

    def _open(self) -> Any:
        try:
            return self._client.get_collection(self.collection_name)
        except Exception as exc:
            try:
                names = sorted(c if isinstance(c, str) else c.name for c in self._client.list_collections())
            except Exception:
                names = []
            known = ", ".join(names[:20]) + (" …" if len(names) > 20 else "") if names else "none"
            raise RetrieverError(f"{self.label}: no collection {self.collection_name!r} in the Chroma {self._where} "
                                 f"(collections: {known}; {boundary.clip(one_line(exc))})") from None

    def _distance_space(self) -> str:
        config = getattr(self._collection, "configuration_json", None) or {}
        space = None
        if isinstance(config, dict):
            space = (config.get("hnsw") or {}).get("space") or (config.get("spann") or {}).get("space")
        meta = self._collection.metadata or {}
        return str(space or meta.get("hnsw:space") or "l2")

    def count(self) -> int:
        return int(self._collection.count())

    def dimension(self) -> int | None:
        if self._dim is None:
            got = self._collection.get(limit=1, include=["embeddings"])
            embeddings = got.get("embeddings")
            if embeddings is not None and len(embeddings):
                self._dim = len(embeddings[0])
        return self._dim

    def _score(self, distance: float) -> float:
        return 1.0 - distance / 2.0 if self._space == "l2" else 1.0 - distance

    def query(self, vector: np.ndarray, n: int) -> list[Row]:
        got = self._collection.query(query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()], n_results=n,
                                     include=["metadatas", "distances"])
        ids = got["ids"][0]
        metas = (got.get("metadatas") or [[None] * len(ids)])[0]
        dists = got["distances"][0]
        rows = []
        for row_id, meta, dist in zip(ids, metas, dists, strict=True):
            card = card_of(lookup(meta, self.id_key)) if self.id_key else row_id
            rows.append(Row(row_id=row_id, card=card, score=round(self._score(float(dist)), 6), metadata=meta))
        return rows

    def sample(self, n: int) -> list[tuple[str, np.ndarray]]:
        got = self._collection.get(limit=n, include=["documents", "embeddings"])
        docs = got.get("documents") or []
        embeddings = got.get("embeddings")
        if embeddings is None:
            return []
        return [(doc, np.asarray(vec, dtype=np.float32)) for doc, vec in zip(docs, embeddings, strict=False)
                if isinstance(doc, str) and doc.strip()]

    def fingerprint(self) -> dict[str, Any]:
        # where the server runs is no part of what is measured (CI and a laptop reach it differently)
        return {"collection": self.collection_name, "space": self._space}

    def close(self) -> None:
        client, self._client, self._collection = self._client, None, None
        if client is None:
            return
        # an HTTP client's connection pools (its own and its admin client's): chromadb's close() leaves
        # them to the garbage collector, which warns of unclosed sockets
        for api in (getattr(client, "_server", None), getattr(getattr(client, "_admin_client", None), "_server", None)):
            session = getattr(api, "_session", None)
            if session is not None:
                session.close()
        closer = getattr(client, "close", None)  # chromadb ≥ 1.1: lets go of its system / files
        if closer is not None:
            closer()
