"""Graded relevance, relevance levels and the three mean conventions against trec_eval (pytrec_eval).

1,200 seeded random queries with graded qrels (grades −1…3, judged-but-nothing-relevant queries,
unjudged retrieved documents) and TREC runs with tied scores, written to files and read by our
loaders (qrels as ``--cases``, ties broken as trec_eval breaks them), scored by
``assemble_results`` and compared per query with pytrec_eval to 1e-9: every measure of the
registry that trec_eval has, by its record's ``Measure.trec_eval`` — nDCG@k (gain = grade,
``ndcg_cut``), P@k, recall@k, AP@k, success@k, reciprocal rank and R-precision — at relevance
levels 1, 2 and 3 (``trec_eval -l``). Then the overall means under ``--mean relevant|trec|trec-c``.
"""

from __future__ import annotations

import functools
import math
import random
from pathlib import Path

import pytest
import pytrec_eval

from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.runs import load_run
from retrieval_gate.metrics import REGISTRY, metric_specs
from retrieval_gate.models import Case
from retrieval_gate.score.assemble import assemble_results
from retrieval_gate.score.results import Results
from tests.reference import graded_ndcg_at_k

KS = (1, 3, 5, 10, 20)
TOL = 1e-9
N_QUERIES = 1200
TREC = {name: m.trec_eval for name, m in REGISTRY.items() if m.trec_eval}  # read from the registry
AT_K = {name: trec.removesuffix("_k") for name, trec in TREC.items() if trec.endswith("_k")}  # P_k → P_5
ON_THE_CUT_RUN = {name: trec for name, trec in TREC.items() if name not in AT_K}  # recip_rank, Rprec

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def random_collection(seed: int) -> tuple[Qrels, Run]:
    """Graded qrels and a run with ties. Some judged queries have no positive grade, some are
    missing from the run, and the run has a query the qrels do not judge."""
    rng = random.Random(seed)
    qrels: Qrels = {}
    run: Run = {}
    for q in range(N_QUERIES):
        pool = [f"d{i}" for i in range(rng.randint(2, 60))]
        judged = rng.sample(pool, rng.randint(1, min(len(pool), 25)))
        shape = rng.random()
        grades = [-1, 0] if shape < 0.08 else [-1, 0, 0, 1, 1, 2, 3]  # 8 %: nothing relevant
        qrels[f"q{q}"] = {d: rng.choice(grades) for d in judged}
        if rng.random() < 0.05:
            continue  # judged, not in the run
        length = rng.randint(1, min(len(pool), 30))
        ties = rng.choice([2, 4, 50])  # few score values: many ties
        run[f"q{q}"] = {d: float(rng.randint(0, ties)) for d in rng.sample(pool, length)}
    run["unjudged-query"] = {"d1": 1.0}
    return qrels, run


def write_files(tmp: Path, qrels: Qrels, run: Run) -> tuple[Path, Path]:
    qrels_path, run_path = tmp / "qrels.txt", tmp / "run.txt"
    lines = ["# a trec_eval 10 comment line", ""]
    lines += [f"{q} 0 {d} {g}" for q, docs in qrels.items() for d, g in docs.items()]
    qrels_path.write_text("\n".join(lines) + "\n")
    rows = [f"{q} Q0 {d} {i} {s} tag extra-column"
            for q, docs in run.items() for i, (d, s) in enumerate(docs.items(), start=1)]
    run_path.write_text("\n".join(rows) + "\n")
    return qrels_path, run_path


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> tuple[Qrels, Run, Path, Path]:
    qrels, run = random_collection(2026)
    qrels_path, run_path = write_files(tmp_path_factory.mktemp("graded"), qrels, run)
    return qrels, run, qrels_path, run_path


@functools.cache
def score(qrels_path: Path, run_path: Path, *, level: int = 1, mean: str = "trec") -> Results:
    case_set = load_cases(qrels_path)
    loaded = load_run(run_path)
    return assemble_results(case_set=case_set, rankings=loaded.rankings, metrics=metric_specs(KS, tuple(TREC)),
                            ks=KS, rel_level=level, mean=mean)


def trec_eval(qrels: Qrels, run: Run, level: int, measures: set[str]) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)


def test_the_collection_covers_the_edge_cases(collection) -> None:
    qrels, run, _, _ = collection
    grades = [g for docs in qrels.values() for g in docs.values()]
    assert {-1, 0, 1, 2, 3} <= set(grades)
    assert sum(1 for docs in qrels.values() if max(docs.values()) <= 0) > 50
    assert sum(1 for q in qrels if q not in run) > 20
    assert any(len(set(s.values())) < len(s) for s in run.values())  # ties


@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_measure_equals_trec_eval_per_query(collection, level: int) -> None:
    qrels, run, qrels_path, run_path = collection
    results = score(qrels_path, run_path, level=level)
    cuts = ",".join(map(str, KS))
    expected = trec_eval(qrels, run, level, {f"{name}.{cuts}" for name in AT_K.values()})
    by_id = {c.id: c for c in results.cases}
    assert set(expected) == {c.id for c in results.cases if c.scores}  # run ∩ qrels
    compared = 0
    for qid, values in expected.items():
        scores = by_id[qid].scores
        for measure, name in AT_K.items():
            for k in KS:
                want = values[f"{name}_{k}"]
                assert scores[f"{measure}@{k}"] == pytest.approx(want, abs=TOL, rel=0), (qid, measure, k)
                compared += 1
    assert compared > 25_000


@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize(("measure", "k"), [(m, k) for m in sorted(ON_THE_CUT_RUN)
                                            for k in (KS if REGISTRY[m].cutoff else (None,))])
def test_a_measure_trec_eval_reads_on_the_run_cut_at_k(collection, level: int, measure: str, k: int | None) -> None:
    """MRR@k is ``recip_rank`` on the run cut at k; a measure without a cutoff (R-precision:
    ``Rprec``) is trec_eval's on the run cut at the grid's depth, the largest k."""
    qrels, _, qrels_path, run_path = collection
    results = score(qrels_path, run_path, level=level)
    name, key = ON_THE_CUT_RUN[measure], measure if k is None else f"{measure}@{k}"
    k = max(KS) if k is None else k
    cut = {c.id: {d: float(k - i) for i, d in enumerate(c.retrieved[:k])} for c in results.cases if c.scores}
    expected = trec_eval(qrels, {q: r for q, r in cut.items() if r}, level, {name})
    for case in results.cases:
        if case.scores:
            want = expected[case.id][name] if case.id in expected else 0.0
            assert case.scores[key] == pytest.approx(want, abs=TOL, rel=0), case.id


def test_graded_ndcg_reference_function_equals_trec_eval_with_negative_and_zero_grades() -> None:
    qrels = {"q": {"a": 2, "b": 1, "c": 0, "d": -1, "e": 3}}
    run = {"q": {"a": 5.0, "d": 4.0, "b": 3.0, "x": 2.0, "e": 1.0}}
    expected = trec_eval(qrels, run, 1, {"ndcg_cut.3,5"})["q"]
    ranked = ("a", "d", "b", "x", "e")
    for k in (3, 5):
        assert graded_ndcg_at_k(ranked, qrels["q"], k) == pytest.approx(expected[f"ndcg_cut_{k}"], abs=TOL)
    # by hand: DCG@5 = 2/log2(2) + 1/log2(4) + 3/log2(6); IDCG@5 = 3 + 2/log2(3) + 1/2
    by_hand = (2 + 1 / 2 + 3 / math.log2(6)) / (3 + 2 / math.log2(3) + 1 / 2)
    assert graded_ndcg_at_k(ranked, qrels["q"], 5) == pytest.approx(by_hand, abs=1e-15)


@pytest.mark.parametrize("measure,name", [("ndcg@10", "ndcg_cut_10"), ("precision@5", "P_5"),
                                          ("map@20", "map_cut_20"), ("recall@10", "recall_10")])
def test_the_three_means_follow_their_rules(collection, measure: str, name: str) -> None:
    qrels, run, qrels_path, run_path = collection
    per_query = trec_eval(qrels, run, 1, {"ndcg_cut.10", "P.5", "map_cut.20", "recall.10"})
    values = [v[name] for v in per_query.values()]
    trec = score(qrels_path, run_path, mean="trec").aggregates["overall"][measure]
    assert trec.n == len(values) and trec.value == pytest.approx(math.fsum(values) / len(values), abs=TOL)
    # trec_eval -c: every judged query, a query missing from the run contributes 0
    trec_c = score(qrels_path, run_path, mean="trec-c").aggregates["overall"][measure]
    assert trec_c.n == len(qrels) and trec_c.value == pytest.approx(math.fsum(values) / len(qrels), abs=TOL)
    # relevant (ours): every query with a relevant document; a missing one contributes 0
    relevant = [q for q, docs in qrels.items() if max(docs.values()) >= 1]
    ours = score(qrels_path, run_path, mean="relevant").aggregates["overall"][measure]
    expected = math.fsum(per_query[q][name] for q in relevant if q in per_query) / len(relevant)
    assert ours.n == len(relevant) and ours.value == pytest.approx(expected, abs=TOL)
    assert len({trec.n, trec_c.n, ours.n}) == 3  # the collection tells the three apart


def test_results_record_the_level_the_gains_and_the_mean(collection) -> None:
    _, _, qrels_path, run_path = collection
    results = score(qrels_path, run_path, level=2, mean="trec-c")
    assert (results.relevance_level, results.graded, results.mean) == (2, True, "trec-c")


@pytest.mark.parametrize("gold,expected_gold,graded", [
    ({"a": 2, "b": 1, "c": 0, "d": -1}, ("a", "b"), True),
    ({"a": 1, "c": 0}, ("a",), False),
    (["a", "b"], ("a", "b"), False),
])
def test_jsonl_gold_as_a_mapping_is_graded_and_as_a_list_binary(gold, expected_gold, graded) -> None:
    case = Case.model_validate({"id": "c", "query": "q", "gold": gold})
    assert case.gold == expected_gold
    assert case.grades == (gold if isinstance(gold, dict) else {})
    results = assemble_results(case_set=_one(case), rankings={}, metrics=metric_specs((5,)), ks=(5,))
    assert results.graded is graded


@pytest.mark.parametrize("gold,message", [
    ({"a": "2"}, "grade of 'a' must be an integer"),
    ({"a": 1.5}, "grade of 'a' must be an integer"),
    ({"a": True}, "grade of 'a' must be an integer"),
    ({"": 1}, "empty card id"),
])
def test_bad_graded_gold_is_refused(gold, message) -> None:
    with pytest.raises(ValueError, match=message):
        Case.model_validate({"id": "c", "query": "q", "gold": gold})


def _one(case: Case):
    from retrieval_gate.models import CaseSet
    return CaseSet((case,), "cases.jsonl", "0", "jsonl")
