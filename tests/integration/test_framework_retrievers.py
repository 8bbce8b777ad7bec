"""``langchain:``, ``llamaindex:`` and ``haystack:`` specs over the example suite, through the CLI,
with real framework objects (``tests/framework_apps.py``: a LangChain ``BaseRetriever`` subclass, a
LlamaIndex ``BaseRetriever`` subclass, a Haystack pipeline around ``InMemoryBM25Retriever``; no
model). Every number is checked against an independent computation from the framework's own
output: the framework asked once for every chunk, its documents' card ids de-duplicated by first
occurrence and cut at k, scored by hand (hit, recall, MRR) and by pytrec_eval (nDCG, P).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.cli import main
from tests import framework_apps as apps

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")
pytest.importorskip("haystack", reason="the haystack extra is not installed")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

REPO = Path(__file__).resolve().parents[2]
APPS = REPO / "tests" / "framework_apps.py"
K = 5
ALL = len(apps.paragraphs())  # asked once for every chunk: the framework's full ranking


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples" / "kb", tmp_path / "kb")
    shutil.copy(REPO / "examples" / "cases.jsonl", tmp_path / "cases.jsonl")
    return tmp_path


def cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(args)
    return int(exited.value.code or 0)


def evaluate(suite: Path, spec: str, *options: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    out = suite / "results.json"
    flags = [item for option in options for item in ("--option", option)]
    code = cli(["eval", "--kb", str(suite / "kb"), "--cases", str(suite / "cases.jsonl"), "--retriever", spec,
                "--k", f"1,3,{K},10", *flags, *extra, "--out", str(out)])
    assert code == 0
    return json.loads(out.read_text(encoding="utf-8"))


def cases() -> list[dict[str, Any]]:
    lines = (REPO / "examples" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def first_cards(card_ids: list[str], k: int) -> list[str]:
    """De-duplicated by first occurrence, cut at k (written here, not imported)."""
    seen: list[str] = []
    for card in card_ids:
        if card not in seen:
            seen.append(card)
    return seen[:k]


def replayed(ask: Any, k: int = 10, overfetch: int = 3) -> list[str]:
    """The cards of the framework's answer at the n the over-fetch asks for (n = k × overfetch,
    doubled while fewer than k cards came out of n documents): for a framework whose answer at n is
    no prefix of its answer at a larger n (ties ordered by the heap, fusion of truncated lanes)."""
    n, last = k * overfetch, None
    while True:
        ids = ask(n)
        cards = first_cards(ids, k)
        if len(cards) == k or len(ids) < n or ids == last:
            return cards
        n, last = n * 2, ids


def independent(rankings: dict[str, list[str]], k: int) -> dict[str, float]:
    """Mean hit@k, recall@k, MRR@k (by hand), nDCG@k and P@k (pytrec_eval) over cases with gold."""
    import pytrec_eval

    gold = {c["id"]: c["gold"] for c in cases() if c.get("gold")}
    qrels = {cid: {card: 1 for card in cards} for cid, cards in gold.items()}
    run = {cid: {card: float(k - i) for i, card in enumerate(rankings[cid][:k])} or {"__none__": 0.0}
           for cid in gold}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}", f"P.{k}"}).evaluate(run)
    hit, recall, rr = [], [], []
    for cid, cards in gold.items():
        top = rankings[cid][:k]
        hit.append(1.0 if set(top) & set(cards) else 0.0)
        recall.append(len(set(top) & set(cards)) / len(set(cards)))
        rr.append(next((1.0 / (i + 1) for i, card in enumerate(top) if card in cards), 0.0))
    n = len(gold)
    return {f"hit@{k}": sum(hit) / n, f"recall@{k}": sum(recall) / n, f"mrr@{k}": sum(rr) / n,
            f"ndcg@{k}": sum(t[f"ndcg_cut_{k}"] for t in trec.values()) / n,
            f"precision@{k}": sum(t[f"P_{k}"] for t in trec.values()) / n}


def assert_equal_to_independent(results: dict[str, Any], rankings: dict[str, list[str]]) -> None:
    by_case = {c["id"]: c for c in results["cases"]}
    for cid, ranking in rankings.items():
        assert by_case[cid]["retrieved"] == ranking[:10], cid
        assert by_case[cid]["error"] is None
    for k in (1, 3, K, 10):
        overall = results["aggregates"]["overall"]
        expected = independent(rankings, k)
        for key, value in expected.items():
            assert overall[key]["value"] == pytest.approx(value, abs=1e-12), key


def langchain_rankings() -> dict[str, list[str]]:
    retriever = apps.keyword_retriever()
    retriever.k = ALL
    return {c["id"]: first_cards([d.metadata["card_id"] for d in retriever.invoke(c["query"])], 10) for c in cases()}


def test_a_langchain_retriever_measures_what_an_independent_computation_from_its_documents_gives(suite):
    results = evaluate(suite, f"langchain:{APPS}:keyword_retriever", "id_key=card_id")
    assert_equal_to_independent(results, langchain_rankings())
    assert results["completeness"]["failed"] == 0
    details = results["config"]["details"]
    assert details["k_passed_as"] == "k" and details["id_key"] == "card_id"
    assert details["framework"].startswith("langchain-core ")
    assert details["source_sha256"] == hashlib.sha256(APPS.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("attr", "k_as"),
    [("keyword_kwargs", "invoke(k=)"), ("keyword_wrapped", "inner retrievers: k"),
     ("langchain_hashed_vectors", "search_kwargs.k")],
)
def test_k_reaches_a_langchain_retriever_its_own_way_and_the_numbers_equal_the_independent_ones(suite, attr, k_as):
    results = evaluate(suite, f"langchain:tests.framework_apps:{attr}", "id_key=card_id")
    assert results["config"]["details"]["k_passed_as"] == k_as
    if attr == "langchain_hashed_vectors":
        full = apps.langchain_hashed_vectors().model_copy(update={"search_kwargs": {"k": ALL}})
        rankings = {c["id"]: first_cards([d.metadata["card_id"] for d in full.invoke(c["query"])], 10)
                    for c in cases()}
        assert apps.langchain_hashed_vectors().search_kwargs == {"k": 4}  # the team's object, unchanged
    else:
        rankings = langchain_rankings()
    assert_equal_to_independent(results, rankings)


def test_a_retriever_that_takes_no_k_is_asked_once_per_case_and_measured_as_it_answers(suite, capsys):
    apps.STATE.clear()
    results = evaluate(suite, "langchain:tests.framework_apps:keyword_fixed", "id_key=card_id")
    assert results["config"]["details"]["k_passed_as"] == "not passed"
    assert apps.STATE["fixed"] == len(cases())  # 4 documents for 30 asked: nothing more there
    rankings = {c["id"]: first_cards([apps.paragraphs()[i][1] for i in apps.keyword_ranking(c["query"], 4)], 10)
                for c in cases()}
    assert_equal_to_independent(results, rankings)
    # said, not silent: the rankings shorter than k distinct cards, counted from the framework's own answer
    short = sum(len(ranked) < K for ranked in rankings.values())
    assert short > 0
    err = capsys.readouterr().err
    assert (f"warning: retriever 'langchain:tests.framework_apps:keyword_fixed' takes no k (k_passed_as: not "
            f"passed): {short} of {len(cases())} rankings hold fewer than {K} distinct cards") in err


def test_a_llamaindex_retriever_measures_what_an_independent_computation_from_its_nodes_gives(suite):
    results = evaluate(suite, f"llamaindex:{APPS}:llamaindex_keyword", "id_key=card_id")
    retriever = apps.llamaindex_keyword()
    retriever.similarity_top_k = ALL
    rankings = {c["id"]: first_cards([n.node.metadata["card_id"] for n in retriever.retrieve(c["query"])], 10)
                for c in cases()}
    assert_equal_to_independent(results, rankings)
    assert results["config"]["details"]["k_passed_as"] == "similarity_top_k"


def test_a_llamaindex_index_is_asked_through_as_retriever_and_equals_the_independent_computation(suite):
    """Hashed-word vectors tie often, and LlamaIndex's top-k orders ties differently at another k:
    the independent ranking is the index's own answer at the n asked (``replayed``)."""
    results = evaluate(suite, "llamaindex:tests.framework_apps:llamaindex_hashed_index", "id_key=card_id")
    assert results["config"]["details"]["k_passed_as"] == "as_retriever(similarity_top_k=)"
    index = apps.llamaindex_hashed_index()
    rankings = {c["id"]: replayed(lambda n, q=c["query"]: [x.node.metadata["card_id"] for x in
                                                           index.as_retriever(similarity_top_k=n).retrieve(q)])
                for c in cases()}
    assert_equal_to_independent(results, rankings)


def test_a_haystack_pipeline_measures_what_an_independent_computation_from_its_documents_gives(suite):
    results = evaluate(suite, f"haystack:{APPS}:haystack_bm25", "id_key=card_id")
    pipeline = apps.haystack_bm25()
    rankings = {}
    for c in cases():
        docs = pipeline.run({"retriever": {"query": c["query"], "top_k": ALL}})["retriever"]["documents"]
        rankings[c["id"]] = first_cards([d.meta["card_id"] for d in docs], 10)
    assert_equal_to_independent(results, rankings)
    assert results["config"]["details"]["k_passed_as"] == "retriever.top_k"
    first = next(c for c in results["cases"] if c["retrieved"])
    assert len(first["retrieved_scores"]) == len(first["retrieved"])  # BM25 scores, each card's best chunk's


def test_a_haystack_hybrid_pipeline_gets_the_query_and_k_on_every_open_socket(suite):
    """Fusion over each lane's top n is no prefix of fusion over everything, so the independent
    computation replays the asks: n = 10 × 3 on every top_k socket, doubled while fewer than 10
    cards came out of n documents."""
    results = evaluate(suite, "haystack:tests.framework_apps:haystack_hybrid", "id_key=card_id")
    assert results["config"]["details"]["k_passed_as"] == "joiner.top_k, okapi.top_k, plus.top_k"
    pipeline = apps.haystack_hybrid()

    def ask(query: str, n: int) -> list[str]:
        data = {"okapi": {"query": query, "top_k": n}, "plus": {"query": query, "top_k": n}, "joiner": {"top_k": n}}
        return [d.meta["card_id"] for d in pipeline.run(data)["joiner"]["documents"]]

    rankings = {c["id"]: replayed(lambda n, q=c["query"]: ask(q, n)) for c in cases()}
    assert_equal_to_independent(results, rankings)


def test_an_async_langchain_retriever_runs_its_queries_concurrently_within_the_bound(suite):
    apps.STATE.clear()
    results = evaluate(suite, "langchain:tests.framework_apps:keyword_retriever_async", "id_key=card_id",
                       "async_concurrency=3")  # by module name: the STATE read here is the one it counts in
    assert apps.STATE["async"]["most"] == 3  # 62 queries, never more than 3 at once
    assert_equal_to_independent(results, langchain_rankings())


def test_a_document_without_the_id_key_fails_its_case_with_a_reason_naming_the_key(suite):
    """The chunks of one card (en-payments-fees) lost their card_id: exactly the cases whose
    over-fetched documents include one fail, with the reason; the others are scored."""
    results = evaluate(suite, f"langchain:{APPS}:keyword_retriever_fees_without_card_id", "id_key=card_id")
    fees = {i for i, (_, card, _) in enumerate(apps.paragraphs()) if card == "en-payments-fees"}
    full = apps.keyword_retriever()
    full.k = ALL
    expected_failed = set()
    for c in cases():  # the asks the over-fetch makes: 15 documents, then 30, … until 10 cards
        n, ranked = 10 * 3, apps.keyword_ranking(c["query"], ALL)
        while True:
            asked = ranked[:n]
            if fees & set(asked):
                expected_failed.add(c["id"])
                break
            if len(first_cards([apps.paragraphs()[i][1] for i in asked], 10)) >= 10 or len(asked) < n:
                break
            n *= 2
    failed = {c["id"]: c["error"] for c in results["cases"] if c["error"] is not None}
    assert set(failed) == expected_failed and 0 < len(failed) < len(cases())
    assert set(failed.values()) == {
        f"langchain:{APPS}:keyword_retriever_fees_without_card_id: a returned document has no "
        "metadata['card_id'] (option id_key; its metadata keys: source)"}
    assert results["completeness"]["failed"] == len(failed)


def test_without_id_key_the_documents_own_id_is_the_id_and_none_is_never_an_id():
    from retrieval_gate.retrieve.frameworks import FrameworkRetriever

    haystack = FrameworkRetriever(kind="haystack", target=f"{APPS}:haystack_bm25")  # Document.id = "<card>/p<n>"
    [answer] = haystack.search(["refund a card payment"], 3)
    assert answer.error is None and all("/p" in card for card in answer.ids) and len(answer.ids) == 3
    langchain = FrameworkRetriever(kind="langchain", target=f"{APPS}:keyword_retriever_async")  # Document.id None
    [answer] = langchain.search(["refund a card payment"], 3)
    assert answer.ids == ()
    assert answer.error == (f"langchain:{APPS}:keyword_retriever_async: a returned document has no Document.id "
                            "(set the id_key option to the metadata key that holds the card id)")


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("langchain:{apps}:paragraphs", [], "expected a langchain_core BaseRetriever, got tuple"),
        ("llamaindex:{apps}:keyword_retriever", [], "expected a llama_index.core BaseRetriever or index, got "
                                                    "KeywordRetriever"),
        ("haystack:{apps}:keyword_ranking", [], "a factory must take no arguments"),
        ("haystack:{apps}:haystack_bm25", ["haystack_query_input=retriever.text"],
         "option haystack_query_input: 'retriever.text' is no unconnected input of the pipeline (its inputs: "
         "retriever.filters, retriever.query, retriever.scale_score, retriever.top_k)"),
        ("haystack:{apps}:haystack_bm25", ["haystack_documents_output=retriever.docs"],
         "option haystack_documents_output: 'retriever.docs' is no output of the pipeline (its outputs: "
         "retriever.documents)"),
        ("haystack:{apps}:haystack_embedding_only", [],
         "no unconnected pipeline input is named 'query': name it with the haystack_query_input option (one of: "
         "retriever.filters, retriever.query_embedding, retriever.return_embedding, retriever.scale_score, "
         "retriever.top_k)"),
        ("langchain:{apps}:nowhere", [], "has no attribute 'nowhere'"),
        ("langchain:no_such_module_xyz:r", [], "cannot import no_such_module_xyz"),
    ],
)
def test_a_framework_spec_that_cannot_be_built_is_exit_2_naming_it(suite, capsys, spec, options, message):
    spec = spec.format(apps=APPS)
    flags = [item for option in options for item in ("--option", option)]
    code = cli(["eval", "--kb", str(suite / "kb"), "--cases", str(suite / "cases.jsonl"), "--retriever", spec,
                *flags, "--out", str(suite / "r.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert spec in err and message in " ".join(err.split())
    assert not (suite / "r.json").exists()


def test_a_malformed_framework_spec_is_a_usage_error(suite, capsys):
    code = cli(["eval", "--kb", str(suite / "kb"), "--cases", str(suite / "cases.jsonl"),
                "--retriever", "langchain:justone", "--out", str(suite / "r.json")])
    assert code == 2
    assert "expected langchain:module:attribute" in capsys.readouterr().err


def test_overfetch_is_the_first_ask_and_the_framework_gets_k_its_own_way(suite):
    """--overfetch 1 asks the LlamaIndex retriever for k documents first, then doubles (ties of
    paragraphs of one card mean more asks); the same cards come out whatever the over-fetch."""
    one = evaluate(suite, f"llamaindex:{APPS}:llamaindex_keyword", "id_key=card_id", extra=("--overfetch", "1"))
    five = evaluate(suite, f"llamaindex:{APPS}:llamaindex_keyword", "id_key=card_id", extra=("--overfetch", "5"))
    assert [c["retrieved"] for c in one["cases"]] == [c["retrieved"] for c in five["cases"]]
    assert (one["config"]["overfetch"], five["config"]["overfetch"]) == (1, 5)


def test_a_plain_eval_imports_no_framework_and_a_spec_imports_only_its_own(suite):
    """In a fresh process: ``bm25`` and ``python:`` import none of the frameworks; ``haystack:``
    imports Haystack alone."""
    probe = ("import json, sys\nfrom retrieval_gate.cli import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit as exc:\n    code = exc.code or 0\n"
             "print(json.dumps({'code': code, 'loaded': sorted({m.split('.')[0] for m in sys.modules}\n"
             "    & {'langchain_core', 'llama_index', 'haystack'})}))")
    (suite / "plain.py").write_text("def search(query, limit):\n    return ['en-account-delete']\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    seen = {}
    for spec in ("bm25", f"python:{suite / 'plain.py'}:search", f"haystack:{APPS}:haystack_bm25"):
        done = subprocess.run([sys.executable, "-c", probe, "eval", "--kb", "kb", "--cases", "cases.jsonl",
                               "--retriever", spec, "--option", "id_key=card_id", "--out", "r.json"],
                              capture_output=True, text=True, env=env, cwd=suite, timeout=600)
        seen[spec.split(":")[0]] = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"bm25": {"code": 0, "loaded": []}, "python": {"code": 0, "loaded": []},
                    "haystack": {"code": 0, "loaded": ["haystack"]}}


def test_a_framework_that_is_not_installed_is_exit_2_naming_the_extra(suite):
    """A process where langchain_core cannot be imported (a meta-path finder refuses it)."""
    blocked = ("import importlib.abc, sys\n"
               "class Refuse(importlib.abc.MetaPathFinder):\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name.split('.')[0] == 'langchain_core':\n"
               "            raise ImportError(f'No module named {name!r}')\n"
               "sys.meta_path.insert(0, Refuse())\n"
               "from retrieval_gate.cli import main\nmain(sys.argv[1:])\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", blocked, "eval", "--kb", "kb", "--cases", "cases.jsonl",
                           "--retriever", f"langchain:{APPS}:keyword_retriever", "--out", "r.json"],
                          capture_output=True, text=True, env=env, cwd=suite, timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "langchain: retriever specs need langchain-core (pip install 'retrieval-gate[langchain]')" in \
        " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr and not (suite / "r.json").exists()
