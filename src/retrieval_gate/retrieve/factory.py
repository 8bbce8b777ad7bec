"""The builder that turns retriever specs (``retrieve.spec``) into ``Retriever`` objects.

``RetrieverBuilder`` is the shell around the adapters: it builds each part once (one BM25
index, one cross-encoder) and shares it between the specs of one eval, so ``dense,bm25,hybrid``
indexes the KB once. The dense retriever is built by the orchestrator before the builder (it
owns the embedder and the store) and handed in — only when some spec needs it: ``bm25`` and the
custom retrievers never load a model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from retrieval_gate.chunk.chunking import ChunkSettings
from retrieval_gate.errors import UsageError
from retrieval_gate.models import Case, KnowledgeBase
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.spec import RetrieverSpec

KNOWN_OPTIONS = frozenset({
    "bm25_k1", "bm25_b", "bm25_language", "bm25_stemmer", "bm25_stopwords", "bm25_token_pattern",
    "rrf_k", "hybrid_depth", "rerank_model", "rerank_top_n", "rerank_batch_size",
    "http_timeout_s", "http_retries", "http_backoff_s", "http_concurrency", "http_headers",
    "http_deadline_s", "http_max_bytes", "http_breaker",
})

# Numeric options and what they accept, checked when the config is read (``option_problems``),
# so a bad value is named with its file and key path before any work starts.
_POSITIVE_INTS = ("rrf_k", "hybrid_depth", "rerank_top_n", "rerank_batch_size", "http_concurrency", "http_max_bytes")
_NON_NEGATIVE_INTS = ("http_retries", "http_breaker")
_POSITIVE_NUMBERS = ("http_timeout_s", "http_deadline_s")
_NON_NEGATIVE_NUMBERS = ("http_backoff_s", "bm25_k1", "bm25_b")


def check_options(options: Mapping[str, Any]) -> None:
    """Unknown retriever options are typos: refuse them rather than ignore them."""
    unknown = sorted(set(options) - KNOWN_OPTIONS)
    if unknown:
        raise UsageError(f"unknown retriever option(s) {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(KNOWN_OPTIONS))})")


def option_problems(options: Mapping[str, Any]) -> list[str]:
    """Every unknown option and every numeric option of the wrong type or range, as
    ``options.KEY: …`` messages quoting at most ~80 characters of the value."""
    from retrieval_gate.load.boundary import quote

    unknown = sorted(set(options) - KNOWN_OPTIONS)
    out = [f"unknown retriever option(s) {', '.join(quote(k)[1:-1] for k in unknown)} "
           f"(known: {', '.join(sorted(KNOWN_OPTIONS))})"] if unknown else []
    for key, value in sorted(options.items()):
        is_int = isinstance(value, int) and not isinstance(value, bool)
        is_number = (is_int or isinstance(value, float)) and value == value and abs(value) != float("inf")
        if key in _POSITIVE_INTS and not (is_int and value >= 1):
            out.append(f"options.{key}: must be an integer ≥ 1, got {quote(value)}")
        elif key in _NON_NEGATIVE_INTS and not (is_int and value >= 0):
            out.append(f"options.{key}: must be an integer ≥ 0, got {quote(value)}")
        elif key in _POSITIVE_NUMBERS and not (is_number and value > 0):
            out.append(f"options.{key}: must be a finite number > 0, got {quote(value)}")
        elif key in _NON_NEGATIVE_NUMBERS and not (is_number and value >= 0):
            out.append(f"options.{key}: must be a finite number ≥ 0, got {quote(value)}")
    return out


def _int_option(options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"options.{key} must be a positive integer, got {value!r}")
    return value


class RetrieverBuilder:
    """Builds retrievers for one eval, sharing their parts (see the module docstring).

    ``options`` are the suite's retriever options: ``bm25_*`` (see ``bm25.BM25Options``),
    ``rrf_k`` (60), ``hybrid_depth`` (100), ``rerank_model``, ``rerank_top_n`` (50),
    ``rerank_batch_size`` (32), ``http_*`` (see ``custom.HttpOptions``).
    """

    def __init__(self, *, kb: KnowledgeBase | None, options: Mapping[str, Any] | None = None,
                 overfetch: int = 3, dense: Retriever | None = None,
                 cases: Sequence[Case] = (), chunking: ChunkSettings | None = None,
                 bm25_units: Sequence[Any] | None = None, cross_encoder: Callable[[str], Any] | None = None):
        self.kb = kb
        self.options = dict(options or {})
        check_options(self.options)
        self.overfetch = overfetch
        self._dense_retriever = dense
        self._cases = list(cases)
        self._chunking = chunking
        self._bm25_units = bm25_units  # the chunks the dense side embeds, when the caller has them
        self._cross_encoder_loader = cross_encoder
        self._parts: dict[str, Any] = {}

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
            from retrieval_gate.retrieve.bm25 import BM25Options, BM25Retriever, units_from_kb

            kb = self._require_kb("bm25")
            opts = BM25Options.from_mapping({**self.options, "overfetch": self.overfetch})
            units = self._bm25_units if self._bm25_units is not None else units_from_kb(kb, self._chunking)
            self._parts["bm25"] = BM25Retriever(units=units, options=opts)
        return self._parts["bm25"]

    def _hybrid(self) -> Retriever:
        if "hybrid" not in self._parts:
            from retrieval_gate.retrieve.fusion import DEFAULT_RRF_K
            from retrieval_gate.retrieve.hybrid import DEFAULT_DEPTH, HybridRetriever

            self._parts["hybrid"] = HybridRetriever(
                lanes=[self._dense(), self._bm25()],
                rrf_k=_int_option(self.options, "rrf_k", DEFAULT_RRF_K),
                depth=_int_option(self.options, "hybrid_depth", DEFAULT_DEPTH),
            )
        return self._parts["hybrid"]

    def _cross_encoder(self) -> tuple[Any, str]:
        from retrieval_gate.retrieve.rerank import DEFAULT_RERANK_MODEL, load_cross_encoder

        name = str(self.options.get("rerank_model") or DEFAULT_RERANK_MODEL)
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
        from retrieval_gate.retrieve import custom

        assert spec.target is not None
        if spec.kind == "python":
            return custom.PythonRetriever(target=spec.target, chunk_to_card=self._chunk_map())
        if spec.kind == "http":
            return custom.HttpRetriever(url=spec.target, options=custom.HttpOptions.from_mapping(self.options),
                                        chunk_to_card=self._chunk_map())
        from retrieval_gate.load.runs import load_run

        return custom.RunRetriever(run=load_run(Path(spec.target)), cases=self._cases,
                                   chunk_to_card=self._chunk_map())

    def build(self, spec: RetrieverSpec) -> Retriever:
        base = self._base(spec)
        if not spec.rerank:
            return base
        from retrieval_gate.retrieve.rerank import DEFAULT_TOP_N, RerankRetriever, card_texts

        kb = self._require_kb("+rerank")
        if "texts" not in self._parts:
            self._parts["texts"] = card_texts(kb)
        scorer, model_name = self._cross_encoder()
        return RerankRetriever(base=base, scorer=scorer, texts=self._parts["texts"], model_name=model_name,
                               top_n=_int_option(self.options, "rerank_top_n", DEFAULT_TOP_N),
                               batch_size=_int_option(self.options, "rerank_batch_size", 32))
