"""Which image a suite needs: the default (torch-free) image for the bundled model without a rerank;
the full variant for another model behind an embedding retriever, or any ``+rerank``."""

from __future__ import annotations

import pytest

from retrieval_gate.cli.init import IMAGE_DEFAULT as DEFAULT
from retrieval_gate.cli.init import IMAGE_FULL as FULL
from retrieval_gate.cli.init import image_variant


@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", " all-minilm-l6-v2 "])
@pytest.mark.parametrize("retriever", ["dense", "bm25", "hybrid", "dense,bm25,hybrid"])
def test_the_bundled_model_without_a_rerank_takes_the_default_image(model: str, retriever: str) -> None:
    variant, why = image_variant(model=model, retriever=retriever)
    assert variant == DEFAULT and "ONNX" in why


@pytest.mark.parametrize("retriever", ["dense", "hybrid", "bm25,dense"])
def test_another_model_behind_an_embedding_retriever_takes_the_full_image(retriever: str) -> None:
    variant, why = image_variant(model="intfloat/e5-small-v2", retriever=retriever)
    assert variant == FULL and "'intfloat/e5-small-v2' is not the bundled" in why


def test_another_model_that_no_retriever_embeds_with_keeps_the_default_image() -> None:
    assert image_variant(model="intfloat/e5-small-v2", retriever="bm25")[0] == DEFAULT


def test_a_rerank_takes_the_full_image_and_both_reasons_are_given() -> None:
    assert image_variant(model="all-MiniLM-L6-v2", retriever="bm25+rerank") == (
        FULL, "bm25+rerank runs the cross-encoder rerank (torch)")
    variant, why = image_variant(model="my/model", retriever="dense+rerank")
    assert variant == FULL and why.count(";") == 1 and "my/model" in why and "dense+rerank" in why
