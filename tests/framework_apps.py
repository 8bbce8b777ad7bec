"""A team's RAG app over the example KB, in each framework — what ``langchain:``, ``llamaindex:``
and ``haystack:`` specs point at in the tests (and ``benchmarks/bench_frameworks.py``).

The app chunks the KB its own way (each Markdown card's body split at blank lines, the card's
``id:`` kept as ``metadata["card_id"]``), not with retrieval-gate's chunker, so a card has several
chunks and the over-fetch and the collapse of a card's chunks are exercised. Nothing here is
imported at module level: importing this module imports no framework.

- ``keyword_*``: a real framework retriever class of our own (no model): chunks ranked by the
  summed idf of the query words they hold, ties by chunk order;
- ``langchain_vectors`` / ``llamaindex_index``: the framework's in-memory vector store over the
  bundled all-MiniLM-L6-v2, wrapped as the framework's embedding class (loads the model);
- ``haystack_bm25``: a Haystack pipeline around its ``InMemoryBM25Retriever`` (no model).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

KB = Path(__file__).resolve().parents[1] / "examples" / "kb"
WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def paragraphs() -> tuple[tuple[str, str, str], ...]:
    """``(chunk_id, card_id, text)`` for every paragraph of every card, in file order."""
    out = []
    for path in sorted(KB.rglob("*.md")):
        raw = path.read_text(encoding="utf-8")
        _, head, body = raw.split("---", 2)
        card = next(line.split(":", 1)[1].strip() for line in head.splitlines() if line.startswith("id:"))
        parts = [p.strip() for p in body.split("\n\n") if p.strip()]
        out += [(f"{card}/p{i}", card, text) for i, text in enumerate(parts)]
    return tuple(out)


def _words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 2}


@lru_cache(maxsize=1)
def _idf() -> dict[str, float]:
    df = Counter(w for _, _, text in paragraphs() for w in _words(text))
    n = len(paragraphs())
    return {w: math.log(1 + n / d) for w, d in df.items()}


def keyword_ranking(query: str, k: int) -> list[int]:
    """Indexes into ``paragraphs()`` of the best ``k`` (score > 0), best first, ties by order."""
    idf, q = _idf(), _words(query)
    scored = [(-sum(idf[w] for w in q & _words(text)), i) for i, (_, _, text) in enumerate(paragraphs())]
    return [i for score, i in sorted(scored) if score < 0][:k]


# ---- LangChain ------------------------------------------------------------------------------------

def keyword_retriever() -> Any:
    """A LangChain ``BaseRetriever`` subclass with a ``k`` field (as ``BM25Retriever`` has)."""
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class KeywordRetriever(BaseRetriever):
        k: int = 4
        id_in: str = "card_id"

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            out = []
            for i in keyword_ranking(query, self.k):
                chunk, card, text = paragraphs()[i]
                lost = self.id_in.endswith(" except " + card)
                meta = {"source": f"kb/{card}.md"} | ({} if lost else {"card_id": card})
                out.append(Document(page_content=text, metadata=meta, id=chunk))
            return out

    return KeywordRetriever()


def keyword_retriever_fees_without_card_id() -> Any:
    """The same, but the chunks of one card (``en-payments-fees``) keep only ``source``."""
    retriever = keyword_retriever()
    retriever.id_in = "card_id except en-payments-fees"
    return retriever


def keyword_retriever_async() -> Any:
    """A retriever with native async (``_aget_relevant_documents``) that counts the calls in flight."""
    import asyncio

    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class AsyncKeyword(BaseRetriever):
        k: int = 4

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            raise AssertionError("the async retriever must be awaited")

        async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            box = STATE.setdefault("async", {"now": 0, "most": 0})
            box["now"] += 1
            box["most"] = max(box["most"], box["now"])
            await asyncio.sleep(0)  # let the other queries in flight start
            await asyncio.sleep(0)
            box["now"] -= 1
            return [Document(page_content=paragraphs()[i][2], metadata={"card_id": paragraphs()[i][1]})
                    for i in keyword_ranking(query, self.k)]

    return AsyncKeyword()


STATE: dict[str, Any] = {}


def keyword_kwargs() -> Any:
    """k only as a keyword of ``_get_relevant_documents`` (``invoke(query, k=…)``)."""
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class KeywordKwargs(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any, k: int = 4) -> list[Document]:
            return [Document(page_content=paragraphs()[i][2], metadata={"card_id": paragraphs()[i][1]})
                    for i in keyword_ranking(query, k)]

    return KeywordKwargs()


def keyword_fixed() -> Any:
    """No way to pass k: always its best 4 chunks (counted in ``STATE["fixed"]``)."""
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class KeywordFixed(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            STATE["fixed"] = STATE.get("fixed", 0) + 1
            return [Document(page_content=paragraphs()[i][2], metadata={"card_id": paragraphs()[i][1]})
                    for i in keyword_ranking(query, 4)]

    return KeywordFixed()


def keyword_wrapped() -> Any:
    """A wrapper that holds the retriever it asks (``retriever`` field), as MultiQueryRetriever does."""
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Wrapper(BaseRetriever):
        retriever: BaseRetriever

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return self.retriever.invoke(query)

    return Wrapper(retriever=keyword_retriever())


def _hashed(text: str) -> list[float]:
    """A bag of hashed words, 256 dimensions, unit length: a deterministic embedding without a model."""
    import hashlib

    vector = [0.0] * 256
    for word in WORD.findall(text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % 256] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


@lru_cache(maxsize=1)
def langchain_hashed_vectors() -> Any:
    """``InMemoryVectorStore.as_retriever()`` over hashed-word vectors (no model)."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class Hashed(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_hashed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _hashed(text)

    store = InMemoryVectorStore(Hashed())
    store.add_documents([Document(page_content=text, metadata={"card_id": card}, id=chunk)
                         for chunk, card, text in paragraphs()])
    return store.as_retriever(search_kwargs={"k": 4})


class MiniLM:
    """The bundled all-MiniLM-L6-v2, loaded once (normalized vectors), each text embedded once (the
    LangChain and LlamaIndex stores share the paragraphs' vectors; a query asked again is not
    embedded again)."""

    model: Any = None
    seen: ClassVar[dict[str, list[float]]] = {}

    @classmethod
    def encode(cls, texts: list[str]) -> list[list[float]]:
        todo = sorted({t for t in texts if t not in cls.seen})
        if todo:
            if cls.model is None:
                from sentence_transformers import SentenceTransformer

                from retrieval_gate.embed.resolve import bundled_model_path

                cls.model = SentenceTransformer(str(bundled_model_path()), device="cpu")
            vectors = cls.model.encode(todo, normalize_embeddings=True, batch_size=32).tolist()
            cls.seen.update(zip(todo, vectors, strict=True))
        return [cls.seen[t] for t in texts]


@lru_cache(maxsize=1)
def langchain_vectors() -> Any:
    """``InMemoryVectorStore(...).as_retriever()`` over the paragraphs, MiniLM vectors."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class MiniLMEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return MiniLM.encode(texts)

        def embed_query(self, text: str) -> list[float]:
            return MiniLM.encode([text])[0]

    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_documents([Document(page_content=text, metadata={"card_id": card}, id=chunk)
                         for chunk, card, text in paragraphs()])
    return store.as_retriever(search_kwargs={"k": 4})


# ---- LlamaIndex -----------------------------------------------------------------------------------

def llamaindex_keyword() -> Any:
    """A LlamaIndex ``BaseRetriever`` subclass with ``similarity_top_k``."""
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class Keyword(BaseRetriever):
        def __init__(self) -> None:
            super().__init__()
            self.similarity_top_k = 2

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            out = []
            for i in keyword_ranking(query_bundle.query_str, self.similarity_top_k):
                chunk, card, text = paragraphs()[i]
                out.append(NodeWithScore(node=TextNode(id_=chunk, text=text, metadata={"card_id": card}),
                                         score=float(len(paragraphs()) - i)))
            return out

    return Keyword()


@lru_cache(maxsize=1)
def llamaindex_index() -> Any:
    """A ``VectorStoreIndex`` over the paragraphs as ``TextNode``s, MiniLM as a ``BaseEmbedding``."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    class MiniLMEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return MiniLM.encode([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return MiniLM.encode([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return MiniLM.encode(texts)

    nodes = [TextNode(id_=chunk, text=text, metadata={"card_id": card}) for chunk, card, text in paragraphs()]
    return VectorStoreIndex(nodes, embed_model=MiniLMEmbedding(model_name="all-MiniLM-L6-v2", embed_batch_size=64))


@lru_cache(maxsize=1)
def llamaindex_hashed_index() -> Any:
    """A ``VectorStoreIndex`` over hashed-word vectors (no model); its retriever has native async."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    class Hashed(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return _hashed(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return _hashed(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return _hashed(text)

    nodes = [TextNode(id_=chunk, text=text, metadata={"card_id": card}) for chunk, card, text in paragraphs()]
    return VectorStoreIndex(nodes, embed_model=Hashed(model_name="hashed-words"))


# ---- Haystack -------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def haystack_bm25() -> Any:
    """A ``Pipeline`` with one component, ``retriever`` (``InMemoryBM25Retriever``)."""
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=chunk, content=text, meta={"card_id": card})
                           for chunk, card, text in paragraphs()])
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=4))
    return pipeline


@lru_cache(maxsize=1)
def haystack_hybrid() -> Any:
    """Two BM25 retrievers (Okapi and BM25+) joined by reciprocal rank fusion: two ``query`` inputs,
    three ``top_k`` inputs, one leaf output (``joiner.documents``)."""
    from haystack import Document, Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    pipeline = Pipeline()
    for name, algorithm in (("okapi", "BM25Okapi"), ("plus", "BM25Plus")):
        store = InMemoryDocumentStore(bm25_algorithm=algorithm)
        store.write_documents([Document(id=chunk, content=text, meta={"card_id": card})
                               for chunk, card, text in paragraphs()])
        pipeline.add_component(name, InMemoryBM25Retriever(document_store=store))
    pipeline.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion"))
    pipeline.connect("okapi.documents", "joiner.documents")
    pipeline.connect("plus.documents", "joiner.documents")
    return pipeline


def haystack_embedding_only() -> Any:
    """A pipeline with no input named ``query`` (an embedding retriever)."""
    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(document_store=InMemoryDocumentStore()))
    return pipeline
