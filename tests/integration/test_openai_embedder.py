"""``model: openai:NAME`` against a fake OpenAI-compatible endpoint of our own, over real HTTP on
127.0.0.1 (``tests/fake_openai.py``): its vectors are the hashed bag of words of
``tests/fake_embedder.py`` (scaled, listed in reverse), so an eval through the endpoint must rank
exactly as one with that embedder handed in; requests are batched, every one carries the key,
a rerun is served by the cache, and every failure is an exit 2 that never shows the key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.evaluation.run import run_eval
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import DIM, HashEmbedder
from tests.fake_openai import FakeOpenAI, fake_openai
from tests.integration.store_fixtures import ROWS, check_against_brute_force, vectors, write_dataset

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("RG_FAKE_OPENAI_KEY", KEY)
    with fake_openai(KEY) as fake:
        yield fake


def cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(args)
    return int(exited.value.code or 0)


def eval_args(tmp_path: Path, fake: FakeOpenAI, *extra: str) -> list[str]:
    kb, cases = write_dataset(tmp_path / "data")
    return ["eval", "--kb", str(kb), "--cases", str(cases), "--k", "1,3", "--model", "openai:fake-embed",
            "--option", f"base_url={fake.base_url}", "--option", "api_key=${RG_FAKE_OPENAI_KEY}",
            "--store", str(tmp_path / "store"), "--out", str(tmp_path / "out" / "results.json"), *extra]


def test_dense_through_the_endpoint_ranks_as_the_same_vectors_handed_in_and_reruns_from_the_cache(
        endpoint: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(eval_args(tmp_path, endpoint, "--option", "openai_max_batch=2")) == 0
    said = capsys.readouterr()
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    kb, cases = write_dataset(tmp_path / "direct")
    direct = run_eval(suite_config=SuiteConfig(kb=str(kb), cases=str(cases), k=(1, 3),
                                               store=StoreSettings(path=str(tmp_path / "direct-store"))),
                      suite="t", embedder=HashEmbedder())
    assert {c["id"]: c["retrieved"] for c in results["cases"]} == {c.id: c.retrieved for c in direct.cases}
    assert results["config"]["model"] == "openai:fake-embed"
    sent = [r for r in endpoint.requests]
    assert sent and all(r["auth"] == f"Bearer {KEY}" and r["model"] == "fake-embed" for r in sent)
    assert max(len(r["inputs"]) for r in sent) == 2  # batched at openai_max_batch
    texts = [t for r in sent for t in r["inputs"]]
    assert len(texts) == len(set(texts))  # each text sent once
    written = (tmp_path / "out" / "results.json").read_text(encoding="utf-8")
    assert KEY not in said.out + said.err + written
    before = len(endpoint.requests)
    assert cli(eval_args(tmp_path, endpoint)) == 0
    assert len(endpoint.requests) == before  # the rerun is served by the embedding cache


def test_a_store_adapter_with_the_endpoint_as_its_query_model(endpoint: FakeOpenAI, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    qdrant_client = pytest.importorskip("qdrant_client")
    from qdrant_client.models import Distance, PointStruct, VectorParams

    folder = tmp_path / "qdrant"
    client = qdrant_client.QdrantClient(path=str(folder))
    try:
        client.create_collection("team", vectors_config=VectorParams(size=DIM, distance=Distance.COSINE))
        client.upsert("team", points=[PointStruct(id=i, vector=v.tolist(), payload={"text": r.text, **r.meta})
                                      for i, (r, v) in enumerate(zip(ROWS, vectors(), strict=True))])
    finally:
        client.close()
    args = eval_args(tmp_path, endpoint, "--retriever", "qdrant:team", "--option", f"path={folder}",
                     "--option", "id_key=card_id")
    assert cli(args) == 0, capsys.readouterr().err
    from retrieval_gate.score.results import Results

    results = Results.model_validate_json((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    check_against_brute_force(results)
    assert results.config["details"]["probe"]["median_cosine"] == pytest.approx(1.0)
    assert results.config["details"]["model"] == "openai:fake-embed"
    sent = {t for r in endpoint.requests for t in r["inputs"]}
    assert not sent & {c["text"] for c in json.loads("[" + ",".join(
        (tmp_path / "data" / "kb.jsonl").read_text().splitlines()) + "]")}  # no KB card was embedded


def test_a_wrong_key_is_exit_2_without_the_key(endpoint: FakeOpenAI, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RG_FAKE_OPENAI_KEY", "sk-wrong-9876543210")
    assert cli(eval_args(tmp_path, endpoint)) == 2
    err = capsys.readouterr().err
    assert f"model openai:fake-embed at {endpoint.base_url}/embeddings: HTTP 401 Unauthorized (check " \
           "options.api_key)" in err
    assert "sk-wrong" not in err and KEY not in err and "Traceback" not in err


def test_server_errors_are_retried(endpoint: FakeOpenAI, tmp_path: Path) -> None:
    endpoint.fail_next = [500, 429]
    assert cli(eval_args(tmp_path, endpoint, "--option", "openai_backoff_s=0")) == 0
    assert endpoint.fail_next == []


def test_a_stalled_endpoint_is_cut_off_at_the_deadline(endpoint: FakeOpenAI, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    endpoint.stall = True
    code = cli(eval_args(tmp_path, endpoint, "--option", "openai_deadline_s=0.5", "--option", "openai_retries=1",
                         "--option", "openai_backoff_s=0"))
    assert code == 2
    assert "no complete answer within 0.5 s (after 2 attempt(s))" in capsys.readouterr().err
    assert len(endpoint.requests) == 2


def test_a_key_written_in_the_config_is_refused_without_showing_it(endpoint: FakeOpenAI, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    args = eval_args(tmp_path, endpoint)
    args[args.index("api_key=${RG_FAKE_OPENAI_KEY}")] = f"api_key={KEY}"
    assert cli(args) == 2
    err = capsys.readouterr().err
    assert "options.api_key: must name an environment variable, written ${NAME}" in err
    assert KEY not in err and endpoint.requests == []


def test_an_unset_key_variable_and_a_missing_base_url_are_exit_2(endpoint: FakeOpenAI, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RG_FAKE_OPENAI_KEY")
    assert cli(eval_args(tmp_path, endpoint)) == 2
    assert "options.api_key: environment variable RG_FAKE_OPENAI_KEY is not set" in capsys.readouterr().err
    monkeypatch.setenv("RG_FAKE_OPENAI_KEY", KEY)
    args = eval_args(tmp_path, endpoint)
    del args[args.index(f"base_url={endpoint.base_url}") - 1: args.index(f"base_url={endpoint.base_url}") + 1]
    assert cli(args) == 2
    assert "model openai:fake-embed needs options.base_url" in capsys.readouterr().err
