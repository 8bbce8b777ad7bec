"""The frameworks' own vector stores over the bundled all-MiniLM-L6-v2 (loads the model): a
LangChain ``InMemoryVectorStore`` retriever and a LlamaIndex ``VectorStoreIndex`` (given as the
index: k passed as ``as_retriever(similarity_top_k=…)``), each over the example KB chunked by the
app (``tests/framework_apps.py``). The measured numbers equal an independent computation from the
framework's own output (asked once for every chunk, de-duplicated by first occurrence, cut at k,
scored by hand and by pytrec_eval)."""

from __future__ import annotations

import pytest

from tests import framework_apps as apps
from tests.integration.test_framework_retrievers import (
    ALL,
    assert_equal_to_independent,
    cases,
    evaluate,
    first_cards,
    suite,  # noqa: F401  (the fixture)
)

pytestmark = pytest.mark.model


def test_a_langchain_vector_store_retriever_equals_the_independent_computation(suite):  # noqa: F811
    results = evaluate(suite, "langchain:tests.framework_apps:langchain_vectors", "id_key=card_id")
    retriever = apps.langchain_vectors()
    full = retriever.model_copy(update={"search_kwargs": {"k": ALL}})  # the whole ranking, once
    rankings = {c["id"]: first_cards([d.metadata["card_id"] for d in full.invoke(c["query"])], 10) for c in cases()}
    assert_equal_to_independent(results, rankings)
    assert results["config"]["details"]["k_passed_as"] == "search_kwargs.k"
    assert retriever.search_kwargs == {"k": 4}  # the team's object is not changed


def test_a_llamaindex_vector_store_index_equals_the_independent_computation(suite):  # noqa: F811
    results = evaluate(suite, "llamaindex:tests.framework_apps:llamaindex_index", "id_key=card_id")
    full = apps.llamaindex_index().as_retriever(similarity_top_k=ALL)
    rankings = {c["id"]: first_cards([n.node.metadata["card_id"] for n in full.retrieve(c["query"])], 10)
                for c in cases()}
    assert_equal_to_independent(results, rankings)
    assert results["config"]["details"]["k_passed_as"] == "as_retriever(similarity_top_k=)"
    scored = next(c for c in results["cases"] if c["retrieved"])
    assert len(scored["retrieved_scores"]) == len(scored["retrieved"])  # cosine of each card's best chunk
