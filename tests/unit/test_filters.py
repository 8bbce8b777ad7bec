"""Metadata filters and the filter false-exclusion rate (docs/decisions.md)."""

from __future__ import annotations

import pytest

from retrieval_gate.errors import MeasurementError
from retrieval_gate.filters import filter_problems, matches, to_chroma_where
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Card, Case, CaseSet, KnowledgeBase
from retrieval_gate.retrieve.bm25 import BM25Retriever, units_from_kb
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.false_exclusion import false_exclusion_extras, filter_false_exclusion_rate

# A hand-worked example: six documents, two tenants, filters that force the wrong locale.
DOCS = {
    "d1": {"tenant": "acme", "locale": "en-US"},
    "d2": {"tenant": "acme", "locale": "en-GB"},
    "d3": {"tenant": "globex", "locale": "en-US"},
    "d4": {"tenant": "acme", "locale": "en-US"},
    "d5": {"tenant": "acme", "locale": "de-DE"},
    "d6": {"tenant": "acme", "locale": "fr-FR"},
}
ELIGIBLE = {d for d, m in DOCS.items() if m["tenant"] == "acme"}
CASES = [
    Case(id="q1", query="where is the guide", gold=("d2",), filter={"locale": "en-US"}),
    Case(id="q2", query="where is the guide", gold=("d4",), filter={"tenant": "acme"}),
    Case(id="q3", query="where is the guide", gold=("d6",), filter={"locale": "en-US"}),
    Case(id="q4", query="where is the guide", gold=("d5",), filter={"locale": "de-DE"}),
]
UNAUTHORIZED_ONLY = Case(id="q5", query="where is the guide", gold=("d3",), filter={"locale": "en-US"})


def test_article_example_rate_is_50_percent_over_4_cases():
    result = filter_false_exclusion_rate(cases=CASES, card_metadata=DOCS, eligible=ELIGIBLE)
    assert result.rate == 0.5
    assert (result.excluded, result.measured, result.filtered) == (2, 4, 4)
    assert result.excluded_ids == ("q1", "q3")


def test_an_unauthorized_only_gold_case_is_not_in_the_denominator():
    with_q5 = filter_false_exclusion_rate(cases=[*CASES, UNAUTHORIZED_ONLY], card_metadata=DOCS,
                                          eligible=ELIGIBLE)
    assert (with_q5.rate, with_q5.measured) == (0.5, 4)


@pytest.mark.parametrize("cases", [[], [UNAUTHORIZED_ONLY], [Case(id="n", query="x", filter={"a": 1})]],
                         ids=["no cases", "unauthorized only", "no gold"])
def test_an_unmeasurable_rate_raises_instead_of_reporting_zero(cases):
    with pytest.raises(MeasurementError, match="cannot be measured"):
        filter_false_exclusion_rate(cases=cases, card_metadata=DOCS, eligible=ELIGIBLE)


def test_cases_without_a_filter_are_not_counted_and_every_card_is_eligible_by_default():
    plain = Case(id="p", query="x", gold=("d1",))
    result = filter_false_exclusion_rate(cases=[*CASES, plain, UNAUTHORIZED_ONLY], card_metadata=DOCS)
    # without an entitlement set d3 is eligible, and q5's filter keeps it: 2 of 5 excluded
    assert (result.excluded, result.measured, result.filtered) == (2, 5, 5)


def test_one_surviving_gold_card_is_enough():
    case = Case(id="m", query="x", gold=("d2", "d4"), filter={"locale": "en-US"})
    assert filter_false_exclusion_rate(cases=[case], card_metadata=DOCS).rate == 0.0


def test_recall_keeps_the_original_gold_after_a_real_filtered_bm25_run():
    """BM25 applies each case's filter; recall@10 is still over the ORIGINAL gold: 50 %, as a
    correct evaluator says (an invalid one, rebuilding gold after filtering, says 100 %)."""
    cards = tuple(Card(id=d, text="the guide is here", metadata=m) for d, m in DOCS.items())
    kb = KnowledgeBase(cards=cards, path="kb.jsonl", sha256="0", format="jsonl")
    eligible_cards = [c for c in cards if c.id in ELIGIBLE]
    retriever = BM25Retriever(units=units_from_kb(KnowledgeBase(tuple(eligible_cards), "kb", "0", "jsonl")))
    answers = retriever.search([c.query for c in CASES], 10, [c.filter for c in CASES])
    assert "d2" not in answers[0].ids and "d6" not in answers[2].ids
    assert set(answers[3].ids) == {"d5"}
    case_set = CaseSet(cases=tuple(CASES), path="cases.jsonl", sha256="0", format="jsonl")
    results = assemble_results(case_set=case_set, rankings={c.id: a for c, a in zip(CASES, answers, strict=True)},
                               metrics=metric_specs((10,), ("recall",)), ks=(10,), kb=kb)
    assert results.completeness.scored == 4
    assert [c.scores["recall@10"] for c in results.cases] == [0.0, 1.0, 0.0, 1.0]
    assert results.aggregates["overall"]["recall@10"].value == 0.5


META = {"locale": "en-US", "year": 2021, "score": 2.5, "draft": True, "team": "search"}


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (None, True),
        ({}, True),
        ({"locale": "en-US"}, True),
        ({"locale": "en-GB"}, False),
        ({"locale": "en-US", "team": "search"}, True),
        ({"locale": "en-US", "team": "ads"}, False),
        ({"year": {"$gte": 2021}}, True),
        ({"year": {"$gt": 2021}}, False),
        ({"score": {"$lt": 3}}, True),
        ({"score": {"$lte": 2.5}}, True),
        ({"year": 2021.0}, True),  # ints and floats compare numerically
        ({"draft": 1}, False),  # booleans never equal numbers
        ({"draft": True}, True),
        ({"locale": {"$in": ["en-GB", "en-US"]}}, True),
        ({"locale": {"$nin": ["en-GB", "en-US"]}}, False),
        ({"missing": {"$ne": "x"}}, True),  # a missing key passes $ne / $nin, fails the rest
        ({"missing": {"$nin": ["x"]}}, True),
        ({"missing": "x"}, False),
        ({"missing": {"$gt": 0}}, False),
        ({"locale": {"$gt": 1}}, False),  # $gt on a string value never matches
        ({"$or": [{"locale": "fr-FR"}, {"year": 2021}]}, True),
        ({"$and": [{"locale": "en-US"}, {"draft": False}]}, False),
    ],
)
def test_matches(where, expected):
    assert matches(META, where) is expected


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ({"locale": {"$like": "en%"}}, "unknown operator"),
        ({"$not": {"a": 1}}, "unknown operator"),
        ({"year": {"$gt": "2020"}}, "must be a number"),
        ({"year": {"$gt": 1, "$lt": 3}}, "exactly one operator"),
        ({"locale": {"$in": []}}, "non-empty list"),
        ({"n": {"$in": [2, 2.5]}}, "same type"),
        ({"$or": []}, "non-empty list"),
        ({"tags": ["a", "b"]}, "string, number or boolean"),
        (["locale"], "must be a mapping"),
    ],
)
def test_filter_problems_name_the_mistake(where, problem):
    problems = filter_problems(where)
    assert problems and problem in problems[0]


def test_a_valid_filter_has_no_problems():
    assert filter_problems({"$and": [{"locale": {"$in": ["a"]}}, {"year": {"$gte": 1}}], "x": True}) == []


def test_to_chroma_where_gives_one_operator_per_level():
    assert to_chroma_where(None) is None
    assert to_chroma_where({}) is None
    assert to_chroma_where({"locale": "en-US"}) == {"locale": "en-US"}
    assert to_chroma_where({"locale": "en-US", "year": {"$gt": 1}}) == {
        "$and": [{"locale": "en-US"}, {"year": {"$gt": 1}}]}
    assert to_chroma_where({"$or": [{"a": 1, "b": 2}, {"c": 3}]}) == {
        "$or": [{"$and": [{"a": 1}, {"b": 2}]}, {"c": 3}]}


CHROMA_METAS = {
    "a": {"locale": "en-US", "n": 1, "b": True},
    "b": {"locale": "en-GB", "n": 2},
    "c": {"n": 3},
    "d": {"locale": "fr-FR", "n": 2.5, "b": False},
}
PARITY_FILTERS = [
    {"locale": "en-US"}, {"locale": {"$ne": "en-US"}}, {"locale": {"$nin": ["en-US"]}},
    {"locale": {"$in": ["en-US", "fr-FR"]}}, {"n": {"$gt": 1}}, {"n": {"$gte": 2}}, {"n": {"$lt": 3}},
    {"n": {"$lte": 2.5}}, {"n": {"$gt": 2.4}}, {"n": 2}, {"n": 2.0}, {"b": True}, {"b": 1}, {"n": True},
    {"b": {"$ne": True}},
    {"locale": "en-GB", "n": 2}, {"$or": [{"n": 3}, {"locale": "en-US"}]},
    {"$and": [{"n": {"$gt": 1}}, {"$or": [{"locale": "en-GB"}, {"b": False}]}]},
]


@pytest.fixture(scope="module")
def chroma_collection(tmp_path_factory):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    # a client of its own (own path): Chroma keeps one system per identifier and refuses a
    # second ephemeral client with other settings in the same process
    client = chromadb.PersistentClient(path=str(tmp_path_factory.mktemp("chroma-parity")),
                                       settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("filter-parity", embedding_function=None)
    collection.add(ids=list(CHROMA_METAS), embeddings=[[1.0, 0.0]] * len(CHROMA_METAS),
                   metadatas=list(CHROMA_METAS.values()))
    yield collection
    client.delete_collection("filter-parity")


@pytest.mark.parametrize("where", PARITY_FILTERS, ids=[str(f) for f in PARITY_FILTERS])
def test_matches_agrees_with_chroma_where(chroma_collection, where):
    ours = sorted(i for i, m in CHROMA_METAS.items() if matches(m, where))
    theirs = sorted(chroma_collection.get(where=to_chroma_where(where))["ids"])
    assert ours == theirs


def test_numbers_compare_as_numbers_where_chroma_truncates_a_fractional_bound():
    """Documented difference (see filters.py): n = 2 < 2.5 here."""
    assert matches({"n": 2}, {"n": {"$lt": 2.5}})


def test_a_card_survives_when_any_of_its_chunks_passes():
    case = Case(id="c", query="x", gold=("k",), filter={"section": "faq"})
    chunks = [{"section": "intro"}, {"section": "faq"}]
    survives = filter_false_exclusion_rate(cases=[case], card_metadata={"k": chunks})
    removed = filter_false_exclusion_rate(cases=[case], card_metadata={"k": [{"section": "intro"}]})
    assert (survives.rate, removed.rate) == (0.0, 1.0)


def test_false_exclusion_extras():
    units = list(DOCS.items())
    assert false_exclusion_extras(cases=[Case(id="p", query="x", gold=("d1",))], units=units) is None
    extras = false_exclusion_extras(cases=CASES, units=units)
    assert extras == {"rate": 0.5, "excluded": 2, "measured": 4, "filtered_cases": 4, "excluded_ids": ["q1", "q3"]}
    unmeasurable = false_exclusion_extras(cases=[Case(id="n", query="x", filter={"a": 1})], units=units)
    assert unmeasurable["rate"] is None and "cannot be measured" in unmeasurable["note"]
