"""The store adapters' specs, options and over-fetch loop (pure parts), and that none of their
libraries is imported unless a store spec is used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

import retrieval_gate
from retrieval_gate.errors import UsageError
from retrieval_gate.retrieve.settings import RetrieverOptions
from retrieval_gate.retrieve.spec import parse_retriever, parse_retrievers
from retrieval_gate.retrieve.stores import Row, card_of, lookup, overfetch_rows


@pytest.mark.parametrize(("text", "kind", "name", "slug"), [
    ("chroma:support-docs", "chroma", "chroma:support-docs", "chroma-support-docs"),
    ("pgvector:public.langchain_pg_embedding", "pgvector", "pgvector:public.langchain_pg_embedding",
     "pgvector-public-langchain_pg_embedding"),
    ("QDRANT:kb+rerank", "qdrant", "qdrant:kb+rerank", "qdrant-kb_rerank"),
])
def test_store_specs_parse_to_their_kind_and_name(text: str, kind: str, name: str, slug: str) -> None:
    spec = parse_retriever(text)
    assert (spec.kind, spec.name, spec.slug) == (kind, name, slug)
    assert spec.embeds_queries_only and not spec.needs_embedder  # the KB is never embedded


@pytest.mark.parametrize("text", ["chroma:", "pgvector:my table", "qdrant:a/b", "chroma:-x"])
def test_a_store_spec_without_a_valid_name_is_refused_naming_the_form(text: str) -> None:
    with pytest.raises(UsageError, match=r"expected (chroma:COLLECTION|pgvector:TABLE|qdrant:COLLECTION)"):
        parse_retriever(text)


def test_an_unknown_spec_lists_the_store_adapters() -> None:
    with pytest.raises(UsageError, match=r"chroma:COLLECTION, pgvector:TABLE, qdrant:COLLECTION"):
        parse_retriever("milvus:docs")


def test_two_store_specs_side_by_side() -> None:
    assert [s.name for s in parse_retrievers("chroma:a,qdrant:a,dense")] == ["chroma:a", "qdrant:a", "dense"]


def test_store_options_are_typed_and_strict() -> None:
    options = RetrieverOptions.model_validate({"host": "db", "port": 8000, "id_key": "card_id", "probe": 0})
    assert (options.stores.host, options.stores.port, options.custom.id_key, options.stores.probe) == \
        ("db", 8000, "card_id", 0)
    assert RetrieverOptions.model_validate({"host": "db", "id_key": "card_id"}).model_dump() == \
        {"host": "db", "id_key": "card_id"}  # a dump reads back as the flat keys given
    for bad, said in [({"port": "8000"}, "options.port: Input should be a valid integer"),
                      ({"port": 0}, "options.port: Input should be greater than or equal to 1"),
                      ({"probe": 65}, "options.probe: Input should be less than or equal to 64")]:
        with pytest.raises(ValidationError, match=said):
            RetrieverOptions.model_validate(bad)


def test_an_api_key_written_out_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValidationError) as caught:
        RetrieverOptions.model_validate({"api_key": "sk-live-abcdef"})
    said = " ".join(e["msg"] for e in caught.value.errors())  # what the CLI prints (the key's value: never)
    assert "options.api_key: must name an environment variable" in said and "sk-live-abcdef" not in said
    assert RetrieverOptions.model_validate({"api_key": "${OPENAI_API_KEY}"}).openai.api_key == "${OPENAI_API_KEY}"


def test_lookup_reads_flat_then_dotted_keys() -> None:
    meta = {"card_id": "a", "metadata": {"card_id": "b", "deep": {"x": 1}}, "a.b": "flat"}
    assert lookup(meta, "card_id") == "a"
    assert lookup(meta, "metadata.card_id") == "b"
    assert lookup(meta, "metadata.deep.x") == 1
    assert lookup(meta, "a.b") == "flat"
    assert lookup(meta, "metadata.nope") is None and lookup(None, "card_id") is None
    assert [card_of(v) for v in ("x", 7, True, None, "", 1.5)] == ["x", "7", None, None, None, None]


# -- the over-fetch loop, over a list of rows ranked by hand ----------------------------------------

def rows_query(rows: list[Row], asked: list[int]):
    def query(_vector: np.ndarray, n: int) -> list[Row]:
        asked.append(n)
        return rows[:n]
    return query


def row(i: int, card: str | None, score: float, **meta: str) -> Row:
    return Row(row_id=f"r{i}", card=card, score=score, metadata=meta or {"locale": "en"})


def never(row: Row) -> Exception:
    raise AssertionError(f"no row lacks its id here: {row}")


def test_over_fetch_doubles_until_k_distinct_cards() -> None:
    # seven chunks of card A, then B, then C: limit 3 × overfetch 2 = 6 rows hold one card; 12 hold three
    rows = [row(i, "A", 1.0 - i / 100) for i in range(7)] + [row(7, "B", 0.5), row(8, "C", 0.4), row(9, "D", 0.3)]
    asked: list[int] = []
    cards, scores = overfetch_rows(rows_query(rows, asked), np.zeros(1), limit=3, overfetch=2, total=len(rows),
                                   where=None, chunk_to_card=None, missing=never)
    assert cards == ["A", "B", "C"] and scores == [1.0, 0.5, 0.4]
    assert asked == [6, 10]  # 6, then doubled to 12, capped at the 10 rows there are


def test_over_fetch_stops_when_the_store_has_no_more() -> None:
    rows = [row(0, "A", 0.9), row(1, "A", 0.8)]
    asked: list[int] = []
    cards, _ = overfetch_rows(rows_query(rows, asked), np.zeros(1), limit=5, overfetch=3, total=2,
                              where=None, chunk_to_card=None, missing=never)
    assert cards == ["A"] and asked == [2]


def test_a_filter_skips_rows_before_the_cut_and_chunks_map_to_cards() -> None:
    rows = [row(0, "A#0", 0.9, locale="pt"), row(1, "B#0", 0.8), row(2, "B#1", 0.7), row(3, "C#0", 0.6)]
    cards, scores = overfetch_rows(rows_query(rows, []), np.zeros(1), limit=2, overfetch=1, total=4,
                                   where={"locale": "en"}, chunk_to_card={"A#0": "A", "B#0": "B", "B#1": "B",
                                                                          "C#0": "C"}, missing=never)
    assert cards == ["B", "C"] and scores == [0.8, 0.6]


def test_a_row_without_its_id_fails_only_when_met_before_k_cards() -> None:
    rows = [row(0, "A", 0.9), row(1, "B", 0.8), row(2, None, 0.7)]

    def missing(r: Row) -> Exception:
        return LookupError(r.row_id)

    assert overfetch_rows(rows_query(rows, []), np.zeros(1), limit=2, overfetch=3, total=3, where=None,
                          chunk_to_card=None, missing=missing)[0] == ["A", "B"]
    with pytest.raises(LookupError, match="r2"):
        overfetch_rows(rows_query(rows, []), np.zeros(1), limit=3, overfetch=3, total=3, where=None,
                       chunk_to_card=None, missing=missing)


# -- nothing imported unless a store spec is used ----------------------------------------------------

def test_no_store_library_is_imported_until_a_store_spec_is_built(tmp_path: Path) -> None:
    code = """
import json, sys
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.evaluation import run, pipeline
from retrieval_gate.retrieve import factory
SuiteConfig(retriever="bm25,chroma:a,pgvector:b,qdrant:c", options={"dsn": "x", "id_key": "card_id"})
print(json.dumps(sorted(m for m in ("psycopg", "qdrant_client", "chromadb", "retrieval_gate.retrieve.stores",
                                    "retrieval_gate.embed.openai") if m in sys.modules)))
"""
    env = {**os.environ, "PYTHONPATH": str(Path(retrieval_gate.__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
