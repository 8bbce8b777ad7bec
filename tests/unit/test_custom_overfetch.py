"""``python:`` and ``http(s)://`` keep the over-fetch contract: the first ask is ``limit ×
overfetch`` documents, doubled while fewer than ``limit`` distinct cards came out, until the
answer is shorter than asked, the same as the last, or 10 doublings; an ``async def`` function
runs its queries concurrently within ``async_concurrency``; the configuration record holds the
module's sha256 and ``retriever_version``, so an edit shows as a configuration change."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.retrieve.asking import MAX_DOUBLINGS, Overfetch
from retrieval_gate.retrieve.custom import HttpRetriever, PythonRetriever
from retrieval_gate.retrieve.settings import CustomSettings, HttpSettings
from retrieval_gate.score.results import Results
from retrieval_gate.settings import SuiteConfig
from tests.helpers import local_server

# Card "a" has 40 chunks, ranked first; then one chunk each of b, c, d.
RANKING = [f"a#{i}" for i in range(40)] + ["b#0", "c#0", "d#0"]
CHUNKS = {chunk: chunk.split("#")[0] for chunk in RANKING}


def test_a_function_returning_chunks_of_one_card_is_asked_again_with_a_doubled_limit():
    asked: list[int] = []

    def search(query: str, limit: int) -> list[str]:
        asked.append(limit)
        return RANKING[:limit]

    [answer] = PythonRetriever(target="t:search", func=search, chunk_to_card=CHUNKS, overfetch=3).search(["q"], 3)
    # 9 → a only; 18 → a only; 36 → a only; 72 → 43 ids (shorter than asked: everything) → a, b, c
    assert asked == [9, 18, 36, 72]
    assert answer.ids == ("a", "b", "c") and answer.error is None


@pytest.mark.parametrize(("overfetch", "asks"), [(1, [3, 6, 12, 24, 48]), (5, [15, 30, 60]), (20, [60])])
def test_overfetch_is_the_first_ask(overfetch, asks):
    asked: list[int] = []

    def search(query: str, limit: int) -> list[str]:
        asked.append(limit)
        return RANKING[:limit]

    [answer] = PythonRetriever(target="t:s", func=search, chunk_to_card=CHUNKS, overfetch=overfetch).search(["q"], 3)
    assert asked == asks and answer.ids == ("a", "b", "c")


def test_an_answer_that_ignores_the_limit_is_asked_twice_at_most():
    asked: list[int] = []

    def search(query: str, limit: int) -> list[str]:
        asked.append(limit)
        return RANKING[:30]  # 30 chunks of a, whatever the limit

    [answer] = PythonRetriever(target="t:s", func=search, chunk_to_card=CHUNKS, overfetch=2).search(["q"], 2)
    assert asked == [4, 8]  # 8 asked, 30 back: longer, so asked once more; 30 again: nothing new
    assert answer.ids == ("a",)


def test_doubling_stops_after_ten_doublings():
    asked: list[int] = []

    def search(query: str, limit: int) -> list[str]:
        asked.append(limit)
        return [f"a#{i}" for i in range(limit)]  # an endless supply of one card's chunks

    PythonRetriever(target="t:s", func=search, overfetch=1, chunk_to_card=None).search(["q"], 1)  # 1 card: done
    asked.clear()
    chunks = {f"a#{i}": "a" for i in range(4096)}
    [answer] = PythonRetriever(target="t:s", func=search, overfetch=1, chunk_to_card=chunks).search(["q"], 2)
    assert asked == [2 * 2 ** i for i in range(MAX_DOUBLINGS + 1)] and answer.ids == ("a",)


def test_overfetch_state_machine_by_hand():
    want = Overfetch(limit=2, overfetch=3, chunk_to_card={"x1": "x", "x2": "x"})
    assert want.n == 6 and not want.done
    want.take(["x1", "x2", "x1", "x2", "x1", "x2"], None)
    assert (want.cards, want.done, want.n) == (("x",), False, 12)
    want.take(["x1", "x2", "y"], [3.0, 2.0, 1.0])
    assert (want.cards, want.scores, want.done, want.asks) == (("x", "y"), (3.0, 1.0), True, [6, 12])
    assert Overfetch(limit=0, overfetch=3, chunk_to_card=None).done


def test_an_async_function_runs_its_queries_concurrently_within_the_bound():
    state = {"now": 0, "most": 0}

    async def search(query: str, limit: int) -> list[str]:
        state["now"] += 1
        state["most"] = max(state["most"], state["now"])
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        state["now"] -= 1
        return RANKING[:limit]

    retriever = PythonRetriever(target="t:s", func=search, chunk_to_card=CHUNKS,
                                options=CustomSettings(concurrency=4))
    answers = retriever.search([f"q{i}" for i in range(20)], 2)
    assert state["most"] == 4
    assert {a.ids for a in answers} == {("a", "b")}


def test_an_async_function_that_raises_fails_only_its_case():
    async def search(query: str, limit: int) -> list[str]:
        if query == "boom":
            raise RuntimeError("index offline")
        return ["x"]

    answers = PythonRetriever(target="t:s", func=search).search(["ok", "boom"], 1)
    assert answers[0].ids == ("x",)
    assert answers[1].error == "python:t:s: RuntimeError: index offline"


# ---- HTTP --------------------------------------------------------------------------------------

def test_http_asks_again_with_a_doubled_limit_until_k_distinct_cards():
    from http.server import BaseHTTPRequestHandler

    bodies: list[dict] = []

    class Endpoint(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            payload = json.dumps({"ids": RANKING[: body["limit"]]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    with local_server(Endpoint) as url:
        retriever = HttpRetriever(url=f"{url}/search", options=HttpSettings(concurrency=1), chunk_to_card=CHUNKS,
                                  overfetch=4)
        [answer] = retriever.search(["q"], 2)
    assert [b["limit"] for b in bodies] == [8, 16, 32, 64]
    assert answer.ids == ("a", "b")


# ---- identity ----------------------------------------------------------------------------------

RETRIEVER = textwrap.dedent('''
    CHUNK_SIZE = {size}

    def search(query, limit):
        return ["en-account-delete", "en-billing-overview"][:limit]
''')


def _eval(tmp_path: Path, options: dict) -> Results:
    from retrieval_gate.evaluation.run import run_eval

    repo = Path(__file__).resolve().parents[2]
    config = SuiteConfig(kb=str(repo / "examples" / "kb"), cases=str(repo / "examples" / "cases.jsonl"),
                         retriever=f"python:{tmp_path / 'rg_glue.py'}:search", options=options)
    return run_eval(suite_config=config, suite="default", created_at="2026-01-01T00:00:00Z")


def test_an_edit_to_the_retrievers_module_or_its_version_is_a_configuration_change(tmp_path):
    module = tmp_path / "rg_glue.py"
    module.write_text(RETRIEVER.format(size=600), encoding="utf-8")
    before = _eval(tmp_path, {})
    assert before.config["details"]["source_sha256"] == hashlib.sha256(module.read_bytes()).hexdigest()
    baseline = update_baseline(baseline=None, results=before, sha="a1", ref="main", timestamp="2026-01-01T00:00:00Z")

    same = compare(results=_eval(tmp_path, {}), baseline=baseline, gate=GateSettings())
    assert same.like_for_like and same.config_changes == []

    module.write_text(RETRIEVER.format(size=250), encoding="utf-8")  # same rankings, another chunk size
    sys.modules.pop("_rg_custom_rg_glue", None)
    edited = compare(results=_eval(tmp_path, {}), baseline=baseline, gate=GateSettings())
    assert not edited.like_for_like
    assert [c.key for c in edited.config_changes] == ["config.details.source_sha256"]

    module.write_text(RETRIEVER.format(size=600), encoding="utf-8")
    versioned = compare(results=_eval(tmp_path, {"retriever_version": "index-2026-02"}), baseline=baseline,
                        gate=GateSettings())
    assert not versioned.like_for_like
    assert [(c.key, c.baseline, c.current) for c in versioned.config_changes] == [
        ("config.details.retriever_version", None, "index-2026-02")]
