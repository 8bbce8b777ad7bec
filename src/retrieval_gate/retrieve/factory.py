"""The builder that turns retriever specs (``retrieve.spec``) into ``Retriever`` objects.

``RetrieverBuilder`` is the shell around the adapters: it builds each part once (one BM25
index, one cross-encoder) and shares it between the specs of one eval, so ``dense,bm25,hybrid``
indexes the KB once. The dense retriever is built by the orchestrator before the builder (it
owns the embedder and the store) and handed in — only when some spec needs it: ``bm25`` and the
custom retrievers never load a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from retrieval_gate.chunk.chunking import ChunkSettings
from retrieval_gate.errors import UsageError
from retrieval_gate.load.runs import load_run
from retrieval_gate.models import Case, KnowledgeBase
from retrieval_gate.retrieve import custom
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.hybrid import HybridRetriever
from retrieval_gate.retrieve.rerank import RerankRetriever, card_texts, load_cross_encoder
from retrieval_gate.retrieve.settings import DEFAULT_RERANK_MODEL, RetrieverOptions
from retrieval_gate.retrieve.spec import FRAMEWORKS, RetrieverSpec


class RetrieverBuilder:
    """Builds retrievers for one eval, sharing their parts (see the module docstring).

    ``options`` are the suite's retriever options, validated when the config was read
    (``retrieve.settings.RetrieverOptions``); each retriever gets its own slice of them.
    """

    def __init__(self, *, kb: KnowledgeBase | None, options: RetrieverOptions | None = None,
                 overfetch: int = 3, dense: Retriever | None = None,
                 cases: Sequence[Case] = (), chunking: ChunkSettings | None = None,
                 bm25_units: Sequence[Any] | None = None, cross_encoder: Callable[[str], Any] | None = None,
                 bm25_built: dict[str, Any] | None = None,
                 query_embedder: Callable[[], Any] | None = None, dsn: str | None = None):
        self.kb = kb
        self.options = options or RetrieverOptions()
        self.overfetch = overfetch
        self._dense_retriever = dense
        self._cases = list(cases)
        self._chunking = chunking
        self._bm25_units = bm25_units  # the chunks the dense side embeds, when the caller has them
        self._cross_encoder_loader = cross_encoder
        self._parts: dict[str, Any] = {}
        # BM25 indexes of these units already built, by their settings (the sweep's points over one
        # chunking share them); None: build here
        self._bm25_built = bm25_built
        # the store adapters' query embedder (the suite's model through the cache), made on first use
        self._query_embedder = query_embedder
        self._dsn = dsn  # options.dsn with its ${NAME} read (settings.SuiteConfig.resolved_option)
        self._opened: list[Any] = []  # store adapters to close

    # parts, each built once
    def _dense(self) -> Retriever:
        if self._dense_retriever is None:
            raise UsageError("the dense retriever is not available here (no embedder/store)")
        return self._dense_retriever

    def _require_kb(self, what: str) -> KnowledgeBase:
        if self.kb is None:
            raise UsageError(f"{what} needs the knowledge base (--kb)")
        return self.kb

    def _bm25(self) -> Retriever:
        if "bm25" not in self._parts:
            from retrieval_gate.retrieve.bm25 import BM25Retriever, units_from_kb

            kb = self._require_kb("bm25")
            key = f"{self.options.bm25.model_dump_json()}|{self.overfetch}"
            if self._bm25_built is not None and key in self._bm25_built:
                self._parts["bm25"] = self._bm25_built[key]
                return self._parts["bm25"]
            units = self._bm25_units if self._bm25_units is not None else units_from_kb(kb, chunking=self._chunking)
            self._parts["bm25"] = BM25Retriever(units=units, settings=self.options.bm25, overfetch=self.overfetch)
            if self._bm25_built is not None:
                self._bm25_built[key] = self._parts["bm25"]
        return self._parts["bm25"]

    def _hybrid(self) -> Retriever:
        if "hybrid" not in self._parts:
            hybrid = self.options.hybrid
            self._parts["hybrid"] = HybridRetriever(lanes=[self._dense(), self._bm25()], rrf_k=hybrid.rrf_k,
                                                    depth=hybrid.depth)
        return self._parts["hybrid"]

    def _cross_encoder(self) -> tuple[Any, str]:
        name = self.options.rerank.model or DEFAULT_RERANK_MODEL
        key = f"ce:{name}"
        if key not in self._parts:
            loader = self._cross_encoder_loader or load_cross_encoder
            self._parts[key] = loader(name)
        return self._parts[key], name

    def _chunk_map(self) -> dict[str, str] | None:
        return self.kb.chunk_to_card if self.kb is not None else None

    def _base(self, spec: RetrieverSpec) -> Retriever:
        if spec.kind == "dense":
            return self._dense()
        if spec.kind == "bm25":
            return self._bm25()
        if spec.kind == "hybrid":
            return self._hybrid()

        assert spec.target is not None
        if spec.embeds_queries_only:
            return self._store(spec)
        if spec.kind == "python":
            return custom.PythonRetriever(target=spec.target, chunk_to_card=self._chunk_map(),
                                          overfetch=self.overfetch, options=self.options.custom)
        if spec.kind == "http":
            return custom.HttpRetriever(url=spec.target, options=self.options.http,
                                        chunk_to_card=self._chunk_map(), overfetch=self.overfetch)
        if spec.kind in FRAMEWORKS:  # imported here: no framework is imported unless its spec is used
            from retrieval_gate.retrieve.frameworks import FrameworkRetriever

            return FrameworkRetriever(kind=spec.kind, target=spec.target, chunk_to_card=self._chunk_map(),
                                      overfetch=self.overfetch, options=self.options.custom)

        return custom.RunRetriever(run=load_run(Path(spec.target)), cases=self._cases,
                                   chunk_to_card=self._chunk_map())

    def _store(self, spec: RetrieverSpec) -> Retriever:
        from retrieval_gate.retrieve.stores import build_store_retriever

        if self._query_embedder is None:
            raise UsageError(f"{spec.name}: no query embedder here (the suite's model embeds its queries)")
        assert spec.target is not None
        settings = self.options.stores.model_copy(update={"id_key": self.options.custom.id_key})  # one id_key
        retriever = build_store_retriever(spec.kind, spec.target, settings=settings, dsn=self._dsn,
                                          embedder=self._query_embedder(), overfetch=self.overfetch,
                                          chunk_to_card=self._chunk_map())
        self._opened.append(retriever)
        return retriever

    def close(self) -> None:
        """Close the store adapters this builder opened."""
        while self._opened:
            self._opened.pop().close()

    def build(self, spec: RetrieverSpec) -> Retriever:
        base = self._base(spec)
        if not spec.rerank:
            return base

        kb = self._require_kb("+rerank")
        if "texts" not in self._parts:
            self._parts["texts"] = card_texts(kb)
        scorer, model_name = self._cross_encoder()
        rerank = self.options.rerank
        return RerankRetriever(base=base, scorer=scorer, texts=self._parts["texts"], model_name=model_name,
                               top_n=rerank.top_n, batch_size=rerank.batch_size)
