"""The retrievers' settings: one typed model per retriever, and ``RetrieverOptions``, the suite's
``options:`` block that holds them. Pure.

The config file and ``--option KEY=VALUE`` keep one flat namespace — ``bm25_k1``, ``rrf_k``,
``hybrid_depth``, ``rerank_model``, ``http_timeout_s``, … — and ``RetrieverOptions`` routes each
key to the model of the retriever it belongs to (``FLAT_KEYS``). This is the one place where
retriever options are validated: an unknown key, a value of the wrong type (strict: ``true`` is
no number, ``"5"`` no integer) or out of range is refused here, when the config is read, named
``options.KEY``; each retriever then receives only its own, already valid, slice.

What needs a library to check (a PyStemmer algorithm, a bm25s stop list, a cross-encoder that
loads) is checked where that library is used, when the retriever is built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from retrieval_gate.load.boundary import quote
from retrieval_gate.retrieve.fusion import DEFAULT_RRF_K

DEFAULT_DEPTH = 100
DEFAULT_TOP_N = 50
DEFAULT_RERANK_MODEL = "cross-encoder/ms-marco-MiniLM-L6-v2"
DEFAULT_TOKEN_PATTERN = r"(?u)\b\w+\b"
HEADERS_KEY = "http_headers"  # the flat key of the HTTP retriever's headers (their values may be secrets)


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# An integer stays one (it is written into the results' fingerprint as given); no boolean passes.
_NonNegativeNumber = Annotated[int, Field(ge=0)] | Annotated[float, Field(ge=0, allow_inf_nan=False)]


class BM25Settings(_Settings):
    """BM25 (``retrieve.bm25``); the defaults reproduce Anserini's flat SciFact run."""

    k1: _NonNegativeNumber = 0.9
    b: _NonNegativeNumber = 0.4
    language: str = "english"
    stemmer: str | None = None  # a PyStemmer algorithm, "none", or None = the language's default
    # a bm25s list name ("en", "pt", …, "lucene" = "en"), "none", the words, or None = the language's
    stopwords: str | tuple[str, ...] | None = None
    token_pattern: str = DEFAULT_TOKEN_PATTERN

    @model_validator(mode="before")
    @classmethod
    def _word_list(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and isinstance(data.get("stopwords"), list):  # YAML gives a list, of text
            data = {**data, "stopwords": tuple(str(w) for w in data["stopwords"])}  # (`1` is the word "1")
        return data


class HybridSettings(_Settings):
    """Reciprocal Rank Fusion of the dense and BM25 lanes (``retrieve.hybrid``)."""

    rrf_k: int = Field(default=DEFAULT_RRF_K, ge=1)
    depth: int = Field(default=DEFAULT_DEPTH, ge=1)  # distinct cards each lane ranks


class RerankSettings(_Settings):
    """The cross-encoder of ``+rerank`` (``retrieve.rerank``)."""

    model: str = DEFAULT_RERANK_MODEL  # a hub name or a local folder
    top_n: int = Field(default=DEFAULT_TOP_N, ge=1)
    batch_size: int = Field(default=32, ge=1)


class HttpSettings(_Settings):
    """An ``http(s)://`` search endpoint (``retrieve.custom.HttpRetriever``)."""

    timeout_s: float = Field(default=10.0, gt=0, allow_inf_nan=False)  # per read
    retries: int = Field(default=2, ge=0)  # extra attempts after the first
    backoff_s: float = Field(default=0.5, ge=0, allow_inf_nan=False)  # wait before retry i: backoff_s · 2^i
    concurrency: int = Field(default=4, ge=1)
    headers: dict[str, str] = Field(default_factory=dict)  # values may name ${VARIABLES} (settings.py)
    deadline_s: float = Field(default=30.0, gt=0, allow_inf_nan=False)  # per attempt: connect + headers + body
    max_bytes: int = Field(default=16 * 1024 * 1024, ge=1)  # a longer answer fails the case
    breaker: int = Field(default=5, ge=0)  # consecutive failed cases that stop the eval (0: never)


# The options that name where a store adapter's row keeps its card id, as messages name them.
ID_KEY_OPTION, ID_COLUMN_OPTION = "id_key", "id_column"


class StoreAdapterSettings(_Settings):
    """The query-only store adapters ``chroma:``, ``pgvector:``, ``qdrant:`` (``retrieve.stores``);
    their flat keys are the field names themselves (``host``, ``dsn``, ``id_key``, …)."""

    host: str | None = None  # chroma: a server (``chroma run``)
    port: int | None = Field(default=None, ge=1, le=65_535)
    path: str | None = None  # chroma: a persistent folder; qdrant: local mode's folder
    url: str | None = None  # qdrant: a server
    dsn: str | None = None  # pgvector: a libpq connection string or URI; may be ${NAME}
    # the metadata (payload, JSONB) key that holds the card id: options.id_key, the key python: and
    # the framework retrievers read too (CustomSettings), handed in by the builder
    id_key: str | None = None
    id_column: str | None = None  # pgvector: a column that holds the card id
    embedding_column: str = "embedding"  # pgvector
    metadata_column: str | None = None  # pgvector: the JSONB column (id_key, filters); None: cmetadata or metadata
    text_column: str | None = None  # pgvector: the document text (probe); None: the first of document, text, content
    text_key: str | None = None  # qdrant: the payload key of the text; None: page_content, text, document, content
    probe: int = Field(default=8, ge=0, le=64)  # documents re-embedded to check the collection's model (0: off)
    probe_min_cosine: float = Field(default=0.98, ge=-1, le=1, allow_inf_nan=False)
    store_timeout_s: float = Field(default=30.0, gt=0, allow_inf_nan=False)  # connect / each request


class OpenAIEmbedSettings(_Settings):
    """``model: openai:NAME`` — an OpenAI-compatible ``/embeddings`` endpoint (``embed.openai``)."""

    base_url: str | None = None  # e.g. https://api.openai.com/v1 (…/embeddings is appended)
    api_key: str | None = None  # ${NAME} only: a key is never written in a file
    timeout_s: float = Field(default=30.0, gt=0, allow_inf_nan=False)  # per read
    deadline_s: float = Field(default=120.0, gt=0, allow_inf_nan=False)  # per request: connect + answer
    retries: int = Field(default=2, ge=0)  # extra attempts (connection errors, timeouts, 429, 5xx)
    backoff_s: float = Field(default=1.0, ge=0, allow_inf_nan=False)  # wait before retry i: backoff_s · 2^i
    max_batch: int = Field(default=256, ge=1, le=2048)  # texts per request (OpenAI takes up to 2048)

    @field_validator("api_key")
    @classmethod
    def _key_from_the_environment(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_ONLY.fullmatch(value):
            raise ValueError("must name an environment variable, written ${NAME} "
                             "(a key written in a file would be committed; its value is not shown)")
        return value


_ENV_ONLY = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")

class CustomSettings(_Settings):
    """What ``python:`` and the framework retrievers (``langchain:``, ``llamaindex:``, ``haystack:``;
    ``retrieve.custom``, ``retrieve.frameworks``) share: where a returned document keeps its card id,
    the version the team gives its retriever (recorded in the config, as the module's source hash
    is), how many queries an async retriever answers at once, and a Haystack pipeline's sockets."""

    id_key: str | None = Field(default=None, min_length=1)  # the metadata key holding the card id
    # recorded in the config as given: text, or an integer (a decimal such as 1.10 must be quoted)
    retriever_version: Annotated[str, Field(min_length=1)] | int | None = None
    concurrency: int = Field(default=8, ge=1)  # queries in flight for an async retriever
    haystack_query_input: str | None = Field(default=None, min_length=1)  # "component.input[,…]"
    haystack_documents_output: str | None = Field(default=None, min_length=1)  # "component.output"
    haystack_top_k_input: str | None = Field(default=None, min_length=1)  # "component.input[,…]" or "none"


# A Haystack pipeline's sockets the options name: the socket's default name → its option.
HAYSTACK_SOCKET_OPTIONS = {"query": "haystack_query_input", "top_k": "haystack_top_k_input",
                           "documents": "haystack_documents_output"}

# The flat key the user writes → (the retriever's model, its field).
_SLICES: dict[str, type[_Settings]] = {"bm25": BM25Settings, "hybrid": HybridSettings, "rerank": RerankSettings,
                                       "http": HttpSettings, "custom": CustomSettings, "stores": StoreAdapterSettings,
                                       "openai": OpenAIEmbedSettings}
FLAT_KEYS: dict[str, tuple[str, str]] = {
    **{f"bm25_{name}": ("bm25", name) for name in BM25Settings.model_fields},
    "rrf_k": ("hybrid", "rrf_k"), "hybrid_depth": ("hybrid", "depth"),
    **{f"rerank_{name}": ("rerank", name) for name in RerankSettings.model_fields},
    **{f"http_{name}": ("http", name) for name in HttpSettings.model_fields},
    "id_key": ("custom", "id_key"), "retriever_version": ("custom", "retriever_version"),
    "async_concurrency": ("custom", "concurrency"),
    **{name: ("custom", name) for name in CustomSettings.model_fields if name.startswith("haystack_")},
    # the store adapters' keys are their own names; id_key is the one of "custom" (read by them too)
    **{name: ("stores", name) for name in StoreAdapterSettings.model_fields if name != ID_KEY_OPTION},
    "base_url": ("openai", "base_url"), "api_key": ("openai", "api_key"),
    **{f"openai_{name}": ("openai", name) for name in OpenAIEmbedSettings.model_fields
       if name not in ("base_url", "api_key")},
}
_FLAT_NAME = {place: key for key, place in FLAT_KEYS.items()}


class RetrieverOptions(BaseModel):
    """The suite's ``options:`` block: each retriever's settings, read from the flat keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bm25: BM25Settings = Field(default_factory=BM25Settings)
    hybrid: HybridSettings = Field(default_factory=HybridSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    custom: CustomSettings = Field(default_factory=CustomSettings)
    stores: StoreAdapterSettings = Field(default_factory=StoreAdapterSettings)
    openai: OpenAIEmbedSettings = Field(default_factory=OpenAIEmbedSettings)

    @model_validator(mode="before")
    @classmethod
    def _from_flat_keys(cls, data: Any) -> Any:
        if isinstance(data, RetrieverOptions):
            return data
        if not isinstance(data, Mapping):
            raise ValueError("expected a mapping of retriever options (e.g. {bm25_k1: 1.2, rrf_k: 60})")
        return _validated_slices(data)

    @model_serializer
    def _as_flat_keys(self) -> dict[str, Any]:
        """The flat keys that were given (the form the config file holds, so a dump reads back)."""
        out: dict[str, Any] = {}
        for slice_name in _SLICES:
            part = getattr(self, slice_name)
            for name in sorted(part.model_fields_set):
                value = getattr(part, name)
                out[_FLAT_NAME[(slice_name, name)]] = list(value) if isinstance(value, tuple) else value
        return dict(sorted(out.items()))

    def with_headers(self, headers: Mapping[str, str]) -> RetrieverOptions:
        """The same options with ``http.headers`` replaced (their ``${NAME}`` resolved)."""
        http = HttpSettings.model_validate({**_given(self.http), "headers": dict(headers)})
        return self.model_copy(update={"http": http})


def _given(part: _Settings) -> dict[str, Any]:
    return {name: getattr(part, name) for name in part.model_fields_set}


def _validated_slices(data: Mapping[str, Any]) -> dict[str, _Settings]:
    """Flat keys → one validated model per retriever; every problem in one ``ValueError``, each
    named ``options.KEY`` (values quoted, at most ~80 characters; header values never)."""
    unknown = sorted(str(k) for k in data if k not in FLAT_KEYS)
    problems = [f"unknown retriever option(s) {', '.join(quote(k)[1:-1] for k in unknown)} "
                f"(known: {', '.join(sorted(FLAT_KEYS))})"] if unknown else []
    groups: dict[str, dict[str, Any]] = {name: {} for name in _SLICES}
    for key, value in data.items():
        if key in FLAT_KEYS:
            slice_name, field = FLAT_KEYS[key]
            groups[slice_name][field] = value
    out: dict[str, _Settings] = {}
    for slice_name, model in _SLICES.items():
        try:
            out[slice_name] = model.model_validate(groups[slice_name])
        except ValidationError as exc:
            said: dict[str, str] = {}  # one problem per key: of a union's members, the last (the widest) speaks
            for err in exc.errors(include_url=False):
                field = str(err["loc"][0]) if err["loc"] else ""
                key = _FLAT_NAME.get((slice_name, field), f"{slice_name}_{field}")
                if key == "http_headers":  # values may be secrets: never quoted
                    said[key] = "options.http_headers: must map header names to text values"
                elif key in ("api_key", "dsn"):  # may be secrets: never quoted
                    said[key] = f"options.{key}: {err['msg'].removeprefix('Value error, ')}"
                else:
                    said[key] = (f"options.{key}: {err['msg'].removeprefix('Value error, ')}, "
                                 f"got {quote(groups[slice_name].get(field))}")
            problems += said.values()
    if problems:
        raise ValueError("; ".join(problems))
    return out
