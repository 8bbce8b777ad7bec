"""Reranking logic with a fake of OUR PairScorer interface (the real cross-encoder runs in
tests/integration/test_rerank.py)."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_gate.models import Card, KnowledgeBase, RankedList
from retrieval_gate.retrieve.rerank import RerankRetriever, card_texts, rerank_order


class LengthScorer:
    """Scores a pair by the length of its text: a deterministic stand-in for a cross-encoder."""

    def __init__(self):
        self.seen: list[list[tuple[str, str]]] = []

    def predict(self, inputs, *, batch_size=32, show_progress_bar=None):
        self.seen.append(list(inputs))
        return [float(len(text)) for _, text in inputs]


class Base:
    name = "bm25"

    def __init__(self, answers: list[RankedList]):
        self.answers = answers
        self.calls: list[tuple[int, Any]] = []

    def fingerprint(self):
        return {"name": "bm25"}

    def search(self, queries, limit, filters=None):
        self.calls.append((limit, filters))
        return self.answers[: len(queries)]


TEXTS = {"a": "x", "b": "xxx", "c": "xx", "d": "xxxx", "e": "xxxxx"}


def test_rerank_order_is_by_score_and_stable_on_ties():
    assert rerank_order(["a", "b", "c"], [1.0, 2.0, 1.0]) == [("b", 2.0), ("a", 1.0), ("c", 1.0)]


def test_only_the_top_n_are_rescored_and_the_tail_keeps_base_order():
    base = Base([RankedList(ids=("a", "b", "c", "e", "d"), latency_ms=1.0)])
    scorer = LengthScorer()
    retriever = RerankRetriever(base=base, scorer=scorer, texts=TEXTS, model_name="m", top_n=3)
    [answer] = retriever.search(["q"], 5, [{"locale": "en"}])
    assert base.calls == [(5, [{"locale": "en"}])]  # max(top_n, limit), filters passed on
    assert scorer.seen == [[("q", "x"), ("q", "xxx"), ("q", "xx")]]
    assert answer.ids == ("b", "c", "a", "e", "d")
    assert answer.scores is None  # two scales (cross-encoder head, base tail) are never mixed
    assert answer.latency_ms >= 1.0


def test_scores_are_the_cross_encoders_when_every_returned_card_was_rescored():
    base = Base([RankedList(ids=("a", "b", "c", "d"))])
    retriever = RerankRetriever(base=base, scorer=LengthScorer(), texts=TEXTS, model_name="m", top_n=4)
    [answer] = retriever.search(["q"], 2)
    assert base.calls[0][0] == 4
    assert answer.ids == ("d", "b")
    assert answer.scores == (4.0, 3.0)
    assert retriever.name == "bm25+rerank"
    assert retriever.fingerprint() == {"name": "bm25+rerank", "model": "m", "top_n": 4, "base": {"name": "bm25"}}


def test_base_errors_pass_through_and_scorer_errors_fail_the_case():
    class Broken:
        def predict(self, inputs, *, batch_size=32, show_progress_bar=None):
            raise RuntimeError("CUDA out of memory")

    base = Base([RankedList(error="lane down"), RankedList(ids=("a",))])
    answers = RerankRetriever(base=base, scorer=Broken(), texts=TEXTS, model_name="m").search(["q1", "q2"], 3)
    assert answers[0].error == "lane down"
    assert answers[1].error == "rerank: RuntimeError: CUDA out of memory"


def test_card_texts_join_title_and_the_entries_of_one_card():
    kb = KnowledgeBase(cards=(Card(id="c", title="Mars", text="one"), Card(id="c#2", parent_id="c", text="two"),
                              Card(id="d", text="solo")), path="kb", sha256="0", format="jsonl")
    assert card_texts(kb) == {"c": "Mars one two", "d": "solo"}


def test_top_n_must_be_positive():
    with pytest.raises(ValueError):
        RerankRetriever(base=Base([]), scorer=LengthScorer(), texts={}, model_name="m", top_n=0)
