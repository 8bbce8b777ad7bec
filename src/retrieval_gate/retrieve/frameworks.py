"""A team's own retriever, measured as its framework runs it: ``langchain:MODULE:ATTR``,
``llamaindex:MODULE:ATTR``, ``haystack:MODULE:ATTR`` (``MODULE`` may be ``path/to/file.py``).

``ATTR`` is the framework's object, or a function of no arguments that returns it:

- **LangChain**: a ``langchain_core`` ``BaseRetriever``. k is passed the framework's way: a
  retriever with ``search_kwargs`` (every ``VectorStoreRetriever``) gets ``search_kwargs["k"]`` (and
  an MMR one ``fetch_k`` ≥ k); one with a ``k`` field (``BM25Retriever``, ``TFIDFRetriever``…) gets
  ``k``; a wrapper (``EnsembleRetriever.retrievers``, ``ContextualCompressionRetriever.base_retriever``,
  ``MultiQueryRetriever.retriever``) passes it to the retrievers it holds; else a retriever whose
  ``_get_relevant_documents`` takes ``k`` gets ``invoke(query, k=…)``; else k is not passed (the
  retriever answers what it answers). Each ask works on a copy: the team's object is never changed.
- **LlamaIndex**: a ``llama_index.core`` ``BaseRetriever`` (one with ``similarity_top_k`` gets it,
  on a copy) or an index (``index.as_retriever(similarity_top_k=k)``).
- **Haystack**: a ``Pipeline`` (or ``AsyncPipeline``). Options name its sockets as
  ``component.socket``: ``haystack_query_input`` (default: every unconnected input named ``query``),
  ``haystack_documents_output`` (default: the one output named ``documents``),
  ``haystack_top_k_input`` (default: every unconnected input named ``top_k``; ``none``: pass none).

The card id of a returned document is ``metadata[id_key]`` (LangChain ``Document.metadata``,
LlamaIndex ``node.metadata``, Haystack ``Document.meta``) when the ``id_key`` option is set, else
the document's own id (LangChain ``Document.id``, LlamaIndex the node's ``ref_doc_id``, Haystack
``Document.id``), mapped chunk → card like every other retriever's ids. A returned document
without it fails its case, with a reason that names the key. Then the shared contract
(``retrieve.asking``): over-fetch until k distinct cards, chunks of one card collapsed to its first
rank. A retriever with native async (LangChain ``_aget_relevant_documents``, LlamaIndex
``_aretrieve``, Haystack 2's ``AsyncPipeline``) answers ``async_concurrency`` queries at once;
others one by one (a Haystack ``Pipeline`` with ``run``: see ``_Haystack``). No framework is
imported unless its spec is used. Framework retrievers take no metadata filter: a case with
``filter`` fails with a reason.

The configuration record (``fingerprint``) holds the spec, ``id_key``, how k was passed, the
framework's version, the sha256 of the module named in the spec and the ``retriever_version``
option: a change to any of them shows as a configuration change.
"""

from __future__ import annotations

import copy
import functools
import importlib.metadata
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrieval_gate.errors import RetrieverError
from retrieval_gate.load import boundary
from retrieval_gate.models import RankedList
from retrieval_gate.retrieve.asking import Overfetch, gather_bounded
from retrieval_gate.retrieve.custom import identity, load_target
from retrieval_gate.retrieve.settings import HAYSTACK_SOCKET_OPTIONS as OPTION
from retrieval_gate.retrieve.settings import CustomSettings

EXTRA = {"langchain": ("langchain-core", "langchain_core"), "llamaindex": ("llama-index-core", "llama_index.core"),
         "haystack": ("haystack-ai", "haystack")}


class MissingId(Exception):
    """A returned document holds no card id where ``id_key`` (or the document's id) should be."""


def _framework(kind: str) -> Any:
    """The framework's module, or RetrieverError naming the extra to install."""
    dist, module = EXTRA[kind]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise RetrieverError(f"{kind}: retriever specs need {dist} (pip install 'retrieval-gate[{kind}]'): "
                             f"{type(exc).__name__}: {exc}") from None


def _version(kind: str) -> str:
    dist = EXTRA[kind][0]
    try:
        return f"{dist} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return dist


def _id_of(meta: Any, own_id: Any, id_key: str | None, *, meta_name: str, own_name: str) -> str:
    value = (meta.get(id_key) if isinstance(meta, Mapping) else None) if id_key is not None else own_id
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        if id_key is None:
            raise MissingId(f"a returned document has no {own_name} (set the id_key option to the {meta_name} "
                            "key that holds the card id)")
        keys = ", ".join(sorted(str(k) for k in meta)) if isinstance(meta, Mapping) and meta else "none"
        present = isinstance(meta, Mapping) and id_key in meta
        said = ("has no" if not present else "has None in" if value is None else "has an empty" if value == ""
                else f"has a {type(value).__name__} in")
        raise MissingId(f"a returned document {said} {meta_name}[{id_key!r}] (option id_key; its {meta_name} "
                        f"keys: {boundary.clip(keys)})")
    return str(value)


# ---- one adapter per framework: ask(query, n) → (ids, scores) -------------------------------------

class _LangChain:
    def __init__(self, obj: Any, options: CustomSettings):
        _framework("langchain")
        from langchain_core.retrievers import BaseRetriever

        self._base = BaseRetriever
        if not isinstance(obj, BaseRetriever):
            raise TypeError(f"expected a langchain_core BaseRetriever, got {type(obj).__name__}")
        self.retriever = obj
        self.id_key = options.id_key
        self.k_as = self._k_as(obj)
        self.is_async = type(obj)._aget_relevant_documents is not BaseRetriever._aget_relevant_documents

    def _k_as(self, r: Any) -> str:
        if isinstance(getattr(r, "search_kwargs", None), dict):
            return "search_kwargs.k"
        if "k" in type(r).model_fields:
            return "k"
        inner = self._inner(r)
        if inner:
            ways = sorted({self._k_as(x) for x in inner})
            return f"inner retrievers: {', '.join(ways)}"
        params = inspect.signature(type(r)._get_relevant_documents).parameters
        if "k" in params or (r._expects_other_args and any(p.kind is p.VAR_KEYWORD for p in params.values())):
            return "invoke(k=)"
        return "not passed"

    def _inner(self, r: Any) -> list[Any]:
        out: list[Any] = []
        for name in ("retrievers", "base_retriever", "retriever"):
            value = getattr(r, name, None)
            items = value if isinstance(value, list) else [value]
            out += [x for x in items if isinstance(x, self._base)]
        return out

    def _with_k(self, r: Any, k: int) -> Any:
        """A copy of ``r`` that answers ``k`` (the team's object is never changed)."""
        kwargs = getattr(r, "search_kwargs", None)
        if isinstance(kwargs, dict):
            update = {**kwargs, "k": k}
            if getattr(r, "search_type", None) == "mmr":
                update["fetch_k"] = max(int(kwargs.get("fetch_k", 20)), k)
            return r.model_copy(update={"search_kwargs": update})
        if "k" in type(r).model_fields:
            return r.model_copy(update={"k": k})
        changes: dict[str, Any] = {}
        for name in ("retrievers", "base_retriever", "retriever"):
            value = getattr(r, name, None)
            if isinstance(value, list) and any(isinstance(x, self._base) for x in value):
                changes[name] = [self._with_k(x, k) if isinstance(x, self._base) else x for x in value]
            elif isinstance(value, self._base):
                changes[name] = self._with_k(value, k)
        return r.model_copy(update=changes) if changes else r

    def _call(self, n: int) -> tuple[Any, dict[str, Any]]:
        if self.k_as == "invoke(k=)":
            return self.retriever, {"k": n}
        if self.k_as == "not passed":
            return self.retriever, {}
        return self._with_k(self.retriever, n), {}

    def _answer(self, docs: Any) -> tuple[list[str], list[float] | None]:
        if not isinstance(docs, list):
            raise TypeError(f"the retriever returned {type(docs).__name__}, not a list of Documents")
        return [_id_of(getattr(d, "metadata", None), getattr(d, "id", None), self.id_key, meta_name="metadata",
                       own_name="Document.id") for d in docs], None

    def ask(self, query: str, n: int) -> tuple[list[str], list[float] | None]:
        r, kwargs = self._call(n)
        return self._answer(r.invoke(query, **kwargs))

    async def aask(self, query: str, n: int) -> tuple[list[str], list[float] | None]:
        r, kwargs = self._call(n)
        return self._answer(await r.ainvoke(query, **kwargs))


class _LlamaIndex:
    def __init__(self, obj: Any, options: CustomSettings):
        _framework("llamaindex")
        from llama_index.core.base.base_retriever import BaseRetriever
        from llama_index.core.indices.base import BaseIndex

        if isinstance(obj, BaseIndex):
            self.index, self.retriever = obj, obj.as_retriever()
            self.k_as = "as_retriever(similarity_top_k=)"
        elif isinstance(obj, BaseRetriever):
            self.index, self.retriever = None, obj
            self.k_as = "similarity_top_k" if hasattr(obj, "similarity_top_k") else "not passed"
        else:
            raise TypeError(f"expected a llama_index.core BaseRetriever or index, got {type(obj).__name__}")
        self.id_key = options.id_key
        self.is_async = type(self.retriever)._aretrieve is not BaseRetriever._aretrieve

    def _with_k(self, n: int) -> Any:
        if self.index is not None:
            return self.index.as_retriever(similarity_top_k=n)
        if self.k_as == "similarity_top_k":
            r = copy.copy(self.retriever)
            r.similarity_top_k = n
            return r
        return self.retriever

    def _answer(self, found: Any) -> tuple[list[str], list[float] | None]:
        if not isinstance(found, list):
            raise TypeError(f"the retriever returned {type(found).__name__}, not a list of nodes")
        ids, scores = [], []
        for item in found:
            node = getattr(item, "node", item)
            ids.append(_id_of(getattr(node, "metadata", None), getattr(node, "ref_doc_id", None), self.id_key,
                              meta_name="metadata", own_name="ref_doc_id (source document)"))
            scores.append(getattr(item, "score", None))
        return ids, _numbers(scores)

    def ask(self, query: str, n: int) -> tuple[list[str], list[float] | None]:
        return self._answer(self._with_k(n).retrieve(query))

    async def aask(self, query: str, n: int) -> tuple[list[str], list[float] | None]:
        return self._answer(await self._with_k(n).aretrieve(query))


class _Haystack:
    def __init__(self, obj: Any, options: CustomSettings):
        _framework("haystack")
        from haystack.core.pipeline.base import PipelineBase

        if not isinstance(obj, PipelineBase):
            raise TypeError(f"expected a haystack Pipeline, got {type(obj).__name__}")
        self.pipeline = obj
        self.id_key = options.id_key
        inputs = obj.inputs()  # {component: {socket: {...}}}: the unconnected inputs
        open_inputs = sorted(f"{c}.{s}" for c, sockets in inputs.items() for s in sockets)
        self.query_inputs = self._sockets(options.haystack_query_input, inputs, "query", open_inputs, required=True)
        top_k = options.haystack_top_k_input
        self.top_k_inputs = ([] if top_k is not None and top_k.strip().lower() == "none" else
                             self._sockets(top_k, inputs, "top_k", open_inputs, required=False))
        self.output = self._output(options.haystack_documents_output)
        # Haystack 2's AsyncPipeline is awaited; a Pipeline is run as the team runs it, with ``run``:
        # its ``run_async`` (Haystack 3) runs parallel branches in whatever order they finish, and
        # a joiner then orders equal scores by that order — the same question, another ranking.
        self.is_async = type(obj).__name__ == "AsyncPipeline"
        self.k_as = ", ".join(self.top_k_inputs) or "not passed"

    @staticmethod
    def _sockets(given: str | None, inputs: Mapping[str, Any], default: str, open_inputs: list[str], *,
                 required: bool) -> list[str]:
        option = OPTION[default]
        if given is None:
            found = [f"{c}.{s}" for c, sockets in sorted(inputs.items()) for s in sockets if s == default]
            if not found and required:
                raise ValueError(f"no unconnected pipeline input is named {default!r}: name it with the {option} "
                                 f"option (one of: {', '.join(open_inputs) or 'none'})")
            return found
        out = [part.strip() for part in given.split(",") if part.strip()]
        for name in out:
            if name not in open_inputs:
                raise ValueError(f"option {option}: {name!r} is no unconnected input of the pipeline "
                                 f"(its inputs: {', '.join(open_inputs) or 'none'})")
        return out

    def _output(self, given: str | None) -> tuple[str, str]:
        outputs = self.pipeline.outputs(include_components_with_connected_outputs=True)
        names = sorted(f"{c}.{s}" for c, sockets in outputs.items() for s in sockets)
        if given is None:
            found = [name for name in names if name.rpartition(".")[2] == "documents"]
            leaves = [f"{c}.{s}" for c, sockets in self.pipeline.outputs().items() for s in sockets if s == "documents"]
            pick = leaves if len(leaves) == 1 else found
            if len(pick) != 1:
                raise ValueError("name the pipeline output that holds the ranked documents with the "
                                 f"{OPTION['documents']} option (its outputs: {', '.join(names) or 'none'})")
            given = pick[0]
        if given not in names:
            raise ValueError(f"option {OPTION['documents']}: {given!r} is no output of the pipeline "
                             f"(its outputs: {', '.join(names) or 'none'})")
        component, _, socket = given.rpartition(".")
        return component, socket

    def _data(self, query: str, n: int) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = {}
        for name, value in [*((q, query) for q in self.query_inputs), *((t, n) for t in self.top_k_inputs)]:
            component, _, socket = name.rpartition(".")
            data.setdefault(component, {})[socket] = value
        return data

    def _answer(self, result: Any) -> tuple[list[str], list[float] | None]:
        component, socket = self.output
        docs = result.get(component, {}).get(socket) if isinstance(result, Mapping) else None
        if not isinstance(docs, list):
            raise TypeError(f"the pipeline's {component}.{socket} gave {type(docs).__name__}, not a list of Documents")
        ids = [_id_of(getattr(d, "meta", None), getattr(d, "id", None), self.id_key, meta_name="meta",
                      own_name="Document.id") for d in docs]
        return ids, _numbers([getattr(d, "score", None) for d in docs])

    def ask(self, query: str, n: int) -> tuple[list[str], list[float] | None]:
        return self._answer(self.pipeline.run(self._data(query, n), include_outputs_from={self.output[0]}))

    async def aask(self, query: str, n: int) -> tuple[list[str], list[float] | None]:
        return self._answer(await self.pipeline.run_async(self._data(query, n),
                                                          include_outputs_from={self.output[0]}))


def _numbers(scores: Sequence[Any]) -> list[float] | None:
    ok = all(isinstance(s, int | float) and not isinstance(s, bool) for s in scores)
    return [float(s) for s in scores] if ok else None


ADAPTERS: dict[str, Callable[[Any, CustomSettings], Any]] = {"langchain": _LangChain, "llamaindex": _LlamaIndex,
                                                            "haystack": _Haystack}


class FrameworkRetriever:
    """``retrieve.base.Retriever`` over a LangChain, LlamaIndex or Haystack object (module docstring)."""

    def __init__(self, *, kind: str, target: str, chunk_to_card: Mapping[str, str] | None = None,
                 overfetch: int = 3, options: CustomSettings | None = None, obj: Any = None):
        self.kind, self.target = kind, target
        self.name = f"{kind}:{target}"
        self.chunk_to_card = chunk_to_card
        self.overfetch = overfetch
        self.options = options or CustomSettings()
        _framework(kind)  # the extra is there before the team's module is imported
        module = None
        if obj is None:
            module, obj = load_target(target, kind=kind, what="attribute")
        self.adapter = self._adapt(obj)
        self._identity = identity(module, obj, self.options.retriever_version)

    def _adapt(self, obj: Any) -> Any:
        """The adapter over the object, or over what a factory (anything callable with no
        arguments that is not the framework's object itself) returns."""
        make = ADAPTERS[self.kind]
        try:
            return make(obj, self.options)
        except TypeError as exc:
            if not callable(obj):
                raise RetrieverError(f"{self.name}: {exc}") from None
        except ValueError as exc:
            raise RetrieverError(f"{self.name}: {exc}") from None
        if not _no_args(obj):
            raise RetrieverError(f"{self.name}: a factory must take no arguments")
        try:
            built = obj()
        except Exception as exc:
            raise RetrieverError(f"{self.name}: calling it failed: {type(exc).__name__}: "
                                 f"{boundary.clip(str(exc))}") from None
        try:
            return make(built, self.options)
        except (TypeError, ValueError) as exc:
            raise RetrieverError(f"{self.name}: {exc}") from None

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, "id_key": self.options.id_key, "k_passed_as": self.adapter.k_as,
                "framework": _version(self.kind), **self._identity}

    def _failed(self, exc: BaseException) -> RankedList:
        reason = str(exc) if isinstance(exc, MissingId) else f"{type(exc).__name__}: {exc}"
        return RankedList(error=f"{self.name}: {boundary.clip(reason)}")

    def _one(self, query: str, limit: int, where: dict[str, Any] | None) -> RankedList:
        if where is not None:
            return RankedList(error=f"{self.name} takes no metadata filter but the case has one")
        started = time.perf_counter()
        want = Overfetch(limit=limit, overfetch=self.overfetch, chunk_to_card=self.chunk_to_card)
        try:
            while not want.done:
                want.take(*self.adapter.ask(query, want.n))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return self._failed(exc)
        return RankedList(ids=want.cards, scores=want.scores, latency_ms=(time.perf_counter() - started) * 1000.0)

    async def _one_async(self, query: str, limit: int, where: dict[str, Any] | None) -> RankedList:
        import asyncio

        if where is not None:
            return RankedList(error=f"{self.name} takes no metadata filter but the case has one")
        started = time.perf_counter()
        want = Overfetch(limit=limit, overfetch=self.overfetch, chunk_to_card=self.chunk_to_card)
        try:
            while not want.done:
                want.take(*await self.adapter.aask(query, want.n))
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:
            return self._failed(exc)
        return RankedList(ids=want.cards, scores=want.scores, latency_ms=(time.perf_counter() - started) * 1000.0)

    def search(self, queries: Sequence[str], limit: int,
               filters: Sequence[dict[str, Any] | None] | None = None) -> list[RankedList]:
        wheres = list(filters) if filters is not None else [None] * len(queries)
        if self.adapter.is_async:
            return gather_bounded([functools.partial(self._one_async, q, limit, w)
                                   for q, w in zip(queries, wheres, strict=True)], self.options.concurrency)
        return [self._one(q, limit, w) for q, w in zip(queries, wheres, strict=True)]


def _no_args(func: Any) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
