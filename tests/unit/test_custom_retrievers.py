"""Pluggable retrievers: python:module:function, an HTTP endpoint (a real server on 127.0.0.1),
a precomputed run file; and the spec parser / builder (custom retrievers never load a model)."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError, RetrieverError, UsageError
from retrieval_gate.load.runs import load_run
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Card, Case, CaseSet, KnowledgeBase, RankedList
from retrieval_gate.overrides import SuiteOverrides
from retrieval_gate.retrieve.base import Retriever
from retrieval_gate.retrieve.custom import HttpRetriever, PythonRetriever, RunRetriever
from retrieval_gate.retrieve.factory import RetrieverBuilder
from retrieval_gate.retrieve.settings import HttpSettings, RetrieverOptions
from retrieval_gate.retrieve.spec import RetrieverSpec, parse_retriever, parse_retrievers
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.settings import ConfigFile, resolve_suite
from tests.helpers import local_server

CHUNKS = {"a#1": "a", "a#2": "a", "b#1": "b"}

MODULE = textwrap.dedent('''
    def search(query, limit):
        if query == "explode":
            raise RuntimeError("index offline")
        if query == "bad":
            return "a,b"
        return ["a#1", "a#2", "b#1", "c", 7][:limit + 2]

    def filtered(query, limit, filter=None):
        return [filter["locale"]] if filter else ["none"]
''')


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "my_search.py"
    path.write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_search", raising=False)  # each test imports its own copy
    return path


def test_python_function_by_module_name_maps_chunks_to_cards_and_cuts_at_limit(user_module):
    retriever = PythonRetriever(target="my_search:search", chunk_to_card=CHUNKS)
    assert isinstance(retriever, Retriever)
    [answer] = retriever.search(["q"], 3)
    assert answer.ids == ("a", "b", "c")  # a#1, a#2 → a (once); integer ids become text
    assert answer.error is None and answer.latency_ms is not None
    assert retriever.search(["q"], 10)[0].ids == ("a", "b", "c", "7")


def test_python_function_by_file_path(user_module):
    retriever = PythonRetriever(target=f"{user_module}:search")
    assert retriever.search(["q"], 2)[0].ids == ("a#1", "a#2")


def test_a_raising_or_misbehaving_function_fails_only_its_case(user_module):
    answers = PythonRetriever(target="my_search:search").search(["ok", "explode", "bad"], 2)
    assert answers[0].error is None
    assert answers[1].error == "python:my_search:search: RuntimeError: index offline"
    assert "must return a list of ids" in answers[2].error


def test_filters_reach_a_function_that_accepts_them_and_fail_one_that_does_not(user_module):
    filtered = PythonRetriever(target="my_search:filtered")
    assert [a.ids for a in filtered.search(["q", "q"], 5, [{"locale": "pt-BR"}, None])] == [("pt-BR",), ("none",)]
    plain = PythonRetriever(target="my_search:search")
    answers = plain.search(["q", "q"], 5, [{"locale": "pt-BR"}, None])
    assert "takes no 'filter' argument" in answers[0].error
    assert answers[1].error is None


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module_xyz:search", "cannot import no_such_module_xyz"),
        ("my_search:missing", "has no function 'missing'"),
        ("nowhere/file.py:search", "not found"),
        ("justone", "expected python:module:function"),
    ],
)
def test_python_retriever_build_errors_are_named(user_module, target, message):
    with pytest.raises(RetrieverError, match=message):
        PythonRetriever(target=target)


# ---- HTTP ---------------------------------------------------------------------------------------

@dataclass
class EndpointLog:
    """What one test's endpoint received; each test gets its own (no state shared between tests)."""

    hits: dict[str, int] = field(default_factory=dict)  # requests per query text
    bodies: list[dict] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)  # "slow" answers once set


def endpoint_handler(log: EndpointLog) -> type[BaseHTTPRequestHandler]:
    """A real search endpoint whose behaviour is chosen by the query text, recording into ``log``."""

    class Endpoint(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            log.bodies.append(body)
            query = body["query"]
            log.hits[query] = n = log.hits.get(query, 0) + 1
            if query == "flaky" and n <= 2:
                return self._send(503, {"error": "busy"})
            if query == "down":
                return self._send(500, {"error": "boom"})
            if query == "missing":
                return self._send(404, {"error": "no such index"})
            if query == "slow":  # answers only when the test is over: the client must give up first
                log.released.wait(timeout=30)
            if query == "garbage":
                return self._send(200, None, raw=b"<html>oops</html>")
            if query == "noids":
                return self._send(200, {"results": []})
            ids = ["a#1", "b#1", "a#2", "c"][: body["limit"] + 1]
            return self._send(200, {"ids": ids, "scores": [4.0, 3.0, 2.0, 1.0][: len(ids)]})

        def _send(self, code, data, raw=None):
            payload = raw if raw is not None else json.dumps(data).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (the timeout test)
                pass

    return Endpoint


@pytest.fixture
def log() -> EndpointLog:
    return EndpointLog()


@pytest.fixture
def endpoint(log: EndpointLog):
    """The URL of a real endpoint on 127.0.0.1, one server per test."""
    with local_server(endpoint_handler(log)) as url:
        try:
            yield f"{url}/search"
        finally:
            log.released.set()  # a held handler lets go before the server shuts down


def fast(**kw) -> HttpSettings:
    return HttpSettings(**{"timeout_s": 5.0, "retries": 2, "backoff_s": 0.0, "concurrency": 2, **kw})


def test_http_posts_query_and_limit_and_reads_ids(endpoint, log):
    retriever = HttpRetriever(url=endpoint, options=fast(), chunk_to_card=CHUNKS)
    assert isinstance(retriever, Retriever)
    [answer] = retriever.search(["hello"], 2)
    assert log.bodies == [{"query": "hello", "limit": 6}]  # 2 cards × over-fetch 3 (4 ids back: all there is)
    assert answer.ids == ("a", "b")
    assert answer.scores == (4.0, 3.0)
    assert answer.error is None


def test_http_sends_the_filter_when_the_case_has_one(endpoint, log):
    HttpRetriever(url=endpoint, options=fast()).search(["hello"], 1, [{"locale": "en-US"}])
    assert log.bodies == [{"query": "hello", "limit": 3, "filter": {"locale": "en-US"}}]  # 1 card × over-fetch 3


def test_http_retries_transient_failures_then_succeeds(endpoint, log):
    slept: list[float] = []
    retriever = HttpRetriever(url=endpoint, options=fast(retries=2, backoff_s=0.5), sleep=slept.append)
    [answer] = retriever.search(["flaky"], 3)
    assert answer.error is None and answer.ids == ("a#1", "b#1", "a#2")
    assert log.hits["flaky"] == 3
    assert slept == [0.5, 1.0]  # backoff_s · 2^i


@pytest.mark.parametrize(
    ("query", "retries", "attempts", "message"),
    [
        ("down", 2, 3, "HTTP 500 Internal Server Error (after 3 attempt(s))"),
        ("missing", 2, 1, "HTTP 404 Not Found"),  # a client error is not retried
        ("garbage", 2, 1, "response is not JSON"),
        ("noids", 0, 1, 'JSON object with "ids"'),
    ],
)
def test_http_failures_become_that_case_error(endpoint, log, query, retries, attempts, message):
    [answer] = HttpRetriever(url=endpoint, options=fast(retries=retries)).search([query], 3)
    assert answer.ids == ()
    assert message in answer.error
    assert log.hits[query] == attempts


def test_http_timeout_is_an_error_not_a_hang(endpoint):
    [answer] = HttpRetriever(url=endpoint, options=fast(timeout_s=0.2, retries=1)).search(["slow"], 3)
    assert "timed out after 0.2 s (after 2 attempt(s))" in answer.error


def test_http_connection_refused_is_an_error():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    [answer] = HttpRetriever(url=f"http://127.0.0.1:{port}/x", options=fast(retries=1)).search(["q"], 3)
    assert "cannot connect" in answer.error


def test_http_failures_are_counted_in_completeness_and_the_run_goes_on(endpoint):
    cases = (Case(id="1", query="hello", gold=("a",)), Case(id="2", query="down", gold=("a",)),
             Case(id="3", query="missing", gold=("b",)))
    answers = HttpRetriever(url=endpoint, options=fast(retries=1), chunk_to_card=CHUNKS).search(
        [c.query for c in cases], 5)
    results = assemble_results(case_set=CaseSet(cases, "cases.jsonl", "0", "jsonl"),
                               rankings={c.id: a for c, a in zip(cases, answers, strict=True)},
                               metrics=metric_specs((5,), ("hit",)), ks=(5,))
    c = results.completeness
    assert (c.expected, c.scored, c.failed) == (3, 1, 2)
    assert c.failed_ids == ["2", "3"]
    assert results.aggregates["overall"]["hit@5"].n == 3  # failed cases score as empty rankings, never dropped
    assert results.aggregates["overall"]["hit@5"].value == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    "options",
    [{"http_timeout_s": 0}, {"http_retries": -1}, {"http_concurrency": 0}, {"http_retries": True},
     {"http_timeout_s": float("inf")}],
)
def test_bad_http_options_are_refused_with_the_suite_config(options):
    [key] = options
    with pytest.raises(InputError, match=f"<flags>: options: options.{key}: "):
        resolve_suite(ConfigFile(), suite="default", overrides=SuiteOverrides(options=options), config_path=None)


# ---- run file ------------------------------------------------------------------------------------

@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "retrieved": ["a#1", "a#2", "b#1"], "scores": [3, 2, 1]},
        {"id": "2", "retrieved": ["b#1"]},
        {"id": "3", "retrieved": [], "error": "upstream timeout"},
    ]) + "\n", encoding="utf-8")
    return path


def test_run_file_matches_by_case_id_and_maps_chunks(run_file):
    cases = [Case(id="1", query="one"), Case(id="2", query="two"), Case(id="3", query="three"),
             Case(id="4", query="four")]
    retriever = RunRetriever(run=load_run(run_file), cases=cases, chunk_to_card=CHUNKS)
    assert isinstance(retriever, Retriever)
    answers = retriever.search_cases(["1", "2", "3", "4"], 5)
    assert [a.ids for a in answers] == [("a", "b"), ("b",), (), ()]
    assert answers[0].scores == (3.0, 1.0)  # a card keeps its first (best) chunk's score
    assert [a.error for a in answers] == [None, None, "upstream timeout", "missing from the run"]
    assert retriever.search(["two", "nobody"], 5)[0].ids == ("b",)
    assert "no case has this query text" in retriever.search(["nobody"], 5)[0].error


def test_run_file_query_text_shared_by_cases_with_different_rankings_is_ambiguous(run_file):
    cases = [Case(id="1", query="same"), Case(id="2", query="same")]
    [answer] = RunRetriever(run=load_run(run_file), cases=cases).search(["same"], 5)
    assert "share this query text" in answer.error


# ---- specs and the builder ----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("dense", RetrieverSpec(kind="dense")),
        (" BM25 ", RetrieverSpec(kind="bm25")),
        ("hybrid+rerank", RetrieverSpec(kind="hybrid", rerank=True)),
        ("python:pkg.mod:fn", RetrieverSpec(kind="python", target="pkg.mod:fn")),
        ("python:src/my.py:fn+rerank", RetrieverSpec(kind="python", target="src/my.py:fn", rerank=True)),
        ("https://search.example/api?x=1", RetrieverSpec(kind="http", target="https://search.example/api?x=1")),
        ("run:runs/bm25.trec", RetrieverSpec(kind="run", target="runs/bm25.trec")),
    ],
)
def test_parse_retriever(text, spec):
    assert parse_retriever(text) == spec


@pytest.mark.parametrize("text", ["sparse", "python:nofunction", "run:", "", "dense,dense"])
def test_bad_retriever_specs_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_retrievers(text)


def test_parse_retrievers_keeps_order_and_names():
    specs = parse_retrievers("dense,bm25,hybrid,hybrid+rerank")
    assert [s.name for s in specs] == ["dense", "bm25", "hybrid", "hybrid+rerank"]
    assert [s.slug for s in specs] == ["dense", "bm25", "hybrid", "hybrid_rerank"]
    assert [s.needs_embedder for s in specs] == [True, False, True, True]


def test_builder_needs_no_dense_retriever_for_custom_or_bm25(user_module, run_file, endpoint):
    kb = KnowledgeBase(cards=(Card(id="a", text="alpha"), Card(id="b", text="beta")), path="kb", sha256="0",
                       format="jsonl")
    builder = RetrieverBuilder(kb=kb, dense=None, cases=[Case(id="2", query="two")])
    for text in ("bm25", "python:my_search:search", endpoint, f"run:{run_file}"):
        retriever = builder.build(parse_retriever(text))
        assert isinstance(retriever, Retriever)
        assert all(isinstance(a, RankedList) for a in retriever.search(["two"], 1))


def test_builder_shares_one_bm25_index_between_bm25_and_hybrid():
    kb = KnowledgeBase(cards=(Card(id="a", text="alpha"), Card(id="b", text="beta")), path="kb", sha256="0",
                       format="jsonl")

    class Dense:
        name = "dense"

        def fingerprint(self):
            return {"name": "dense"}

        def search(self, queries, limit, filters=None):
            return [RankedList(ids=("b", "a")) for _ in queries]

    options = RetrieverOptions.model_validate({"rrf_k": 10, "hybrid_depth": 5})
    builder = RetrieverBuilder(kb=kb, dense=Dense(), options=options)
    bm25 = builder.build(parse_retriever("bm25"))
    hybrid = builder.build(parse_retriever("hybrid"))
    assert hybrid.lanes[1] is bm25
    assert hybrid.fingerprint()["rrf_k"] == 10
    # alpha: bm25 rank 1 + dense rank 2 beats beta: dense rank 1 only
    assert hybrid.search(["alpha"], 2)[0].ids == ("a", "b")


def test_rerank_without_a_loadable_model_is_a_retriever_error():
    kb = KnowledgeBase(cards=(Card(id="a", text="alpha"),), path="kb", sha256="0", format="jsonl")

    def refuse(name):
        raise RetrieverError(f"cannot load cross-encoder {name!r}")

    builder = RetrieverBuilder(kb=kb, options=RetrieverOptions.model_validate({"rerank_model": "/nowhere"}),
                               cross_encoder=refuse)
    with pytest.raises(RetrieverError, match="/nowhere"):
        builder.build(parse_retriever("bm25+rerank"))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://search.example/api?key=SECRET", "https://search.example/api"),
        ("https://search.example:8443/v1/search#frag", "https://search.example:8443/v1/search"),
    ],
)
def test_an_endpoint_is_named_without_credentials_or_query_string(url, shown):
    spec = parse_retriever(url)
    assert spec.target == url  # the request still goes to the full URL
    assert spec.name == shown
    retriever = HttpRetriever(url=url)
    assert retriever.name == shown
    assert retriever.fingerprint() == {"name": "http", "url": shown}


def test_an_error_message_never_shows_the_query_string(endpoint):
    [answer] = HttpRetriever(url=f"{endpoint}?token=SECRET", options=fast(retries=0)).search(["missing"], 1)
    assert "HTTP 404" in answer.error and "SECRET" not in answer.error
