"""Retriever specs, parsed once (in the suite config): ``--retriever dense,bm25,hybrid,hybrid+rerank,
python:module:function,langchain:module:attr,llamaindex:…,haystack:…,https://…,run:FILE``. Pure."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from retrieval_gate.errors import UsageError
from retrieval_gate.http_deadline import public_url

Kind = Literal["dense", "bm25", "hybrid", "python", "http", "run", "langchain", "llamaindex", "haystack",
               "chroma", "pgvector", "qdrant"]
BUILTIN: tuple[Kind, ...] = ("dense", "bm25", "hybrid")
# A team's own retriever in its framework, ``KIND:MODULE:ATTR`` (``retrieve.frameworks``).
FRAMEWORKS: tuple[Kind, ...] = ("langchain", "llamaindex", "haystack")
RERANK_SUFFIX = "+rerank"


@dataclass(frozen=True)
class RetrieverSpec:
    kind: Kind
    target: str | None = None  # module:function, URL or run path
    rerank: bool = False

    @property
    def name(self) -> str:
        """The label used in tables, results files and file names (a URL without its query string
        or credentials: those may hold secrets, and results end up in PR comments)."""
        base = {"python": f"python:{self.target}", **{kind: f"{kind}:{self.target}" for kind in FRAMEWORKS},
                **{kind: f"{kind}:{self.target}" for kind in STORE_KINDS},
                "http": public_url(self.target or ""),
                "run": f"run:{self.target}"}.get(self.kind, self.kind)
        return f"{base}{RERANK_SUFFIX}" if self.rerank else str(base)

    @property
    def needs_embedder(self) -> bool:
        return self.kind in ("dense", "hybrid")

    @property
    def embeds_queries_only(self) -> bool:
        """A store adapter (``retrieve.stores``): the suite's model embeds the queries, never the KB."""
        return self.kind in STORE_KINDS

    @property
    def slug(self) -> str:
        """A file-name-safe label: ``results.<slug>.json``."""
        keep = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in self.name.replace("+", "_"))
        return "-".join(part for part in keep.split("-") if part) or self.kind


def parse_retriever(text: str) -> RetrieverSpec:
    """One spec: ``dense`` | ``bm25`` | ``hybrid`` | ``python:MODULE:FUNCTION`` | ``langchain:MODULE:ATTR``
    | ``llamaindex:MODULE:ATTR`` | ``haystack:MODULE:ATTR`` | ``http(s)://URL`` | ``run:PATH``, any of
    them optionally followed by ``+rerank``."""
    raw = text.strip()
    rerank = raw.lower().endswith(RERANK_SUFFIX)
    if rerank:
        raw = raw[: -len(RERANK_SUFFIX)].strip()
    lower = raw.lower()
    if lower in BUILTIN:
        return RetrieverSpec(kind=lower, rerank=rerank)  # type: ignore[arg-type]
    if lower.startswith(("http://", "https://")):
        if "@" in urllib.parse.urlsplit(raw).netloc:
            raise UsageError(f"retriever {public_url(raw)}: a URL with credentials (user:password@host) is refused: "
                             "they would show in errors and reports. Send them as a header read from the "
                             "environment instead: options.http_headers: {Authorization: 'Basic ${NAME}'}")
        return RetrieverSpec(kind="http", target=raw, rerank=rerank)
    if lower.startswith("python:"):
        target = raw[len("python:"):]
        if target.count(":") < 1 or not target.rpartition(":")[2] or not target.rpartition(":")[0]:
            raise UsageError(f"retriever {text!r}: expected python:module:function")
        return RetrieverSpec(kind="python", target=target, rerank=rerank)
    for kind in FRAMEWORKS:
        if lower.startswith(f"{kind}:"):
            target = raw[len(kind) + 1:]
            if not target.rpartition(":")[2] or not target.rpartition(":")[0]:
                raise UsageError(f"retriever {text!r}: expected {kind}:module:attribute (the retriever, index or "
                                 "pipeline object, or a function of no arguments that returns it)")
            return RetrieverSpec(kind=kind, target=target, rerank=rerank)
    if lower.split(":", 1)[0] in STORE_KINDS and ":" in raw:
        return _store_spec(text, raw, rerank=rerank)
    if lower.startswith("run:"):
        target = raw[len("run:"):]
        if not target:
            raise UsageError(f"retriever {text!r}: expected run:PATH")
        return RetrieverSpec(kind="run", target=target, rerank=rerank)
    raise UsageError(f"retriever {text!r} is unknown (dense, bm25, hybrid, python:module:function, "
                     "langchain:module:attr, llamaindex:module:attr, haystack:module:attr, "
                     "http(s)://…, run:PATH, chroma:COLLECTION, pgvector:TABLE, qdrant:COLLECTION; "
                     "add +rerank for a cross-encoder)")


STORE_KINDS = ("chroma", "pgvector", "qdrant")  # the query-only store adapters (retrieve/stores)
_STORE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,254}")


def _store_spec(text: str, raw: str, *, rerank: bool) -> RetrieverSpec:
    kind, _, target = raw.partition(":")
    kind = kind.lower()
    what = "TABLE" if kind == "pgvector" else "COLLECTION"
    if not _STORE_NAME.fullmatch(target):
        raise UsageError(f"retriever {text!r}: expected {kind}:{what} (letters, digits, '.', '_', '-'; "
                         f"{'schema.table' if kind == 'pgvector' else 'the collection name'})")
    return RetrieverSpec(kind=kind, target=target, rerank=rerank)  # type: ignore[arg-type]


def parse_retrievers(text: str | Sequence[str]) -> list[RetrieverSpec]:
    """A comma-separated list (or a list) of specs, in order, without repeats."""
    items = text.split(",") if isinstance(text, str) else list(text)
    specs: list[RetrieverSpec] = []
    for item in items:
        if not item.strip():
            continue
        spec = parse_retriever(item)
        if spec in specs:
            raise UsageError(f"retriever {spec.name!r} is listed twice")
        specs.append(spec)
    if not specs:
        raise UsageError("no retriever given")
    return specs


@lru_cache(maxsize=64)
def parse_retriever_list(text: str) -> tuple[RetrieverSpec, ...]:
    """``parse_retrievers`` for the config's text, cached: a suite's specs are parsed once."""
    return tuple(parse_retrievers(text))

