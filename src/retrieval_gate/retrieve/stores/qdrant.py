"""``qdrant:COLLECTION`` — a team's Qdrant collection, in local mode (option ``path``: the folder
``QdrantClient(path=…)`` wrote) or on a server (option ``url``), read only (``retrieve.stores``).
``id_key`` names the payload key holding the card id (dotted for nested: LangChain's
``QdrantVectorStore`` keeps it at ``metadata.card_id``); without it, the point id, mapped chunk →
card through the KB. A case's filter reads the payload's keys and those of its ``metadata``
object. The text the model probe re-embeds is the payload's ``text_key`` (default the
first of ``page_content``, ``text``, ``document``, ``content``). Scores are Qdrant's (cosine
similarity for a ``Cosine`` collection)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.errors import RetrieverError, one_line
from retrieval_gate.http_deadline import public_url
from retrieval_gate.load import boundary
from retrieval_gate.retrieve.settings import ID_KEY_OPTION, StoreAdapterSettings
from retrieval_gate.retrieve.stores import Row, card_of, lookup

_TEXT_KEYS = ("page_content", "text", "document", "content")


def filterable(payload: dict[str, Any]) -> dict[str, Any]:
    """What a case's filter reads: the payload's keys, and those of its ``metadata`` object
    (LangChain's layout) where the payload has none of that name."""
    nested = payload.get("metadata")
    return {**nested, **payload} if isinstance(nested, dict) else payload


class QdrantStoreClient:
    def __init__(self, collection: str, *, settings: StoreAdapterSettings):
        self.collection_name = collection
        self.settings = settings
        self.label = f"qdrant:{collection}"
        self.id_key = settings.id_key
        self.id_option = ID_KEY_OPTION
        self.id_label = f"payload key {settings.id_key!r}" if settings.id_key else "id"
        if (settings.path is None) == (settings.url is None):
            raise RetrieverError(f"{self.label} needs options.path (a local-mode folder) or options.url "
                                 "(a Qdrant server), one of them")
        try:
            from qdrant_client import QdrantClient
        except ImportError:
            raise RetrieverError(f"{self.label} needs qdrant-client (pip install 'retrieval-gate[qdrant]')") from None
        where = f"folder {settings.path}" if settings.path is not None else f"server {public_url(settings.url or '')}"
        try:
            if settings.path is not None:
                if not Path(settings.path).is_dir():
                    raise RetrieverError(f"{self.label}: options.path {settings.path} is not a folder")
                self._client = QdrantClient(path=settings.path)
            else:
                self._client = QdrantClient(url=settings.url, timeout=int(max(1, settings.store_timeout_s)))
            names = sorted(c.name for c in self._client.get_collections().collections)
        except RetrieverError:
            raise
        except Exception as exc:
            raise RetrieverError(f"{self.label}: cannot open Qdrant's {where}: "
                                 f"{boundary.clip(one_line(exc))}") from None
        if collection not in names:
            self.close()
            raise RetrieverError(f"{self.label}: no collection {collection!r} in Qdrant's {where} "
                                 f"(collections: {', '.join(names[:20]) or 'none'})")
        self._vector_name, self._dim, self._distance = self._vectors()

    def _vectors(self) -> tuple[str | None, int | None, str]:
        params = self._client.get_collection(self.collection_name).config.params.vectors
        if isinstance(params, dict):  # named vectors: one is needed
            if len(params) != 1:
                raise RetrieverError(f"{self.label}: the collection has several named vectors "
                                     f"({', '.join(sorted(params))}); one is supported")
            name, params = next(iter(params.items()))
        else:
            name = None
        return name, int(params.size), str(getattr(params.distance, "value", params.distance))

    def count(self) -> int:
        return int(self._client.count(self.collection_name, exact=True).count)

    def dimension(self) -> int | None:
        return self._dim

    def query(self, vector: np.ndarray, n: int) -> list[Row]:
        points = self._client.query_points(self.collection_name, query=np.asarray(vector, dtype=np.float32).tolist(),
                                           using=self._vector_name, limit=n, with_payload=True).points
        rows = []
        for point in points:
            payload = point.payload or {}
            card = card_of(lookup(payload, self.id_key)) if self.id_key else str(point.id)
            rows.append(Row(row_id=str(point.id), card=card, score=round(float(point.score), 6),
                            metadata=filterable(payload)))
        return rows

    def sample(self, n: int) -> list[tuple[str, np.ndarray]]:
        points, _ = self._client.scroll(self.collection_name, limit=n, with_payload=True, with_vectors=True)
        out = []
        for point in points:
            payload = point.payload or {}
            keys = (self.settings.text_key,) if self.settings.text_key else _TEXT_KEYS
            text = next((payload[k] for k in keys if isinstance(payload.get(k), str) and payload[k].strip()), None)
            vector = point.vector.get(self._vector_name) if isinstance(point.vector, dict) else point.vector
            if text is not None and vector is not None:
                out.append((text, np.asarray(vector, dtype=np.float32)))
        return out

    def fingerprint(self) -> dict[str, Any]:
        return {"collection": self.collection_name, "distance": self._distance}

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()
