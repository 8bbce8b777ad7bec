"""Every measure of the registry that trec_eval has (its record's ``Measure.trec_eval``) against
trec_eval (pytrec_eval) on seeded random runs, to 1e-9.

pytrec_eval gets, per query, the de-duplicated ranking with strictly decreasing scores, so its own
ordering (score desc, ties by docid desc) reproduces our ranking exactly. A ``…_k`` name is
trec_eval's measure at cutoff k (``P_k`` → ``P_5``); any other is trec_eval's measure on the run
truncated to k (MRR@k: ``recip_rank``), and on the whole run for a measure without a cutoff (it
reads the ranking to its end, as trec_eval reads a run).
hit@k is also an independent set formula. A separate test feeds tied scores through our TREC loader.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pytrec_eval

from retrieval_gate.load.runs import load_run
from retrieval_gate.metrics import MEASURES, REGISTRY, dedupe_first, metric_specs
from tests.reference import FUNCTIONS, case_scores

CUTOFFS = (1, 3, 5, 10, 100)
TREC = {name: m.trec_eval for name, m in REGISTRY.items() if m.trec_eval}  # read from the registry
TOL = 1e-9

Queries = dict[str, tuple[tuple[str, ...], frozenset[str]]]


def random_queries(seed: int, n: int = 400) -> Queries:
    """Many queries: pools of 3–400 docs, 1–30 gold docs (often more than k), rankings of
    0–250 raw ids with repeats (so shorter than k after de-duplication, or empty), gold
    over-represented so that hits land at every depth."""
    rng = random.Random(seed)
    out: Queries = {}
    for q in range(n):
        pool = [f"d{i}" for i in range(rng.randint(3, 400))]
        gold = frozenset(rng.sample(pool, rng.randint(1, min(len(pool), 30))))
        gold_list = sorted(gold)
        length = rng.choice([0, 1, 2, 3, 4, 6, 9, 11, 40, 120, 250])
        raw = [rng.choice(gold_list) if rng.random() < 0.25 else rng.choice(pool) for _ in range(length)]
        out[f"q{q}"] = (dedupe_first(raw), gold)
    return out


def trec_inputs(queries: Queries, cut: int | None = None) -> tuple[dict, dict]:
    qrels = {q: {d: 1 for d in gold} for q, (_, gold) in queries.items()}
    run = {}
    for q, (ranked, _) in queries.items():
        top = ranked[:cut] if cut is not None else ranked
        run[q] = {d: float(len(top) - i) for i, d in enumerate(top)}  # strictly decreasing
    return qrels, run


def trec_eval(queries: Queries, measures: set[str], cut: int | None = None) -> dict[str, dict[str, float]]:
    qrels, run = trec_inputs(queries, cut)
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


@pytest.fixture(scope="module", params=[11, 23, 2026])
def queries(request: pytest.FixtureRequest) -> Queries:
    return random_queries(request.param)


def test_random_runs_cover_the_edge_cases(queries: Queries) -> None:
    lengths = [len(r) for r, _ in queries.values()]
    assert min(lengths) == 0 and max(lengths) > 100
    assert any(len(g) > 10 for _, g in queries.values())
    assert any(0 < len(r) < 5 for r, _ in queries.values())


def trec_values(queries: Queries, measure: str, k: int | None) -> dict[str, float]:
    """trec_eval's value of ``measure`` per query at cutoff k (k None, for a measure without a
    cutoff: on the whole run), read through the registry's ``trec_eval`` name (module docstring)."""
    name = TREC[measure]
    if name.endswith("_k"):
        family = name.removesuffix("_k")
        return {q: v[f"{family}_{k}"] for q, v in trec_eval(queries, {f"{family}.{k}"}).items()}
    return {q: v[name] for q, v in trec_eval(queries, {name}, cut=k).items()}


def test_the_parity_tests_cover_every_measure_trec_eval_has() -> None:
    assert set(TREC) >= {"hit", "recall", "ndcg", "mrr", "precision", "map"}
    assert all(TREC[m] for m in TREC)


@pytest.mark.parametrize("measure", sorted(TREC))
def test_metric_equals_trec_eval(queries: Queries, measure: str) -> None:
    fn = FUNCTIONS[measure]
    for k in CUTOFFS:
        expected = trec_values(queries, measure, k)
        for q, (ranked, gold) in queries.items():
            assert fn(ranked, gold, k) == pytest.approx(expected[q], abs=TOL, rel=0), (q, k)


def test_hit_equals_the_set_formula(queries: Queries) -> None:
    for ranked, gold in queries.values():
        for k in CUTOFFS:
            assert FUNCTIONS["hit"](ranked, gold, k) == (1.0 if set(ranked[:k]) & gold else 0.0)


@pytest.mark.parametrize("ks", [CUTOFFS, (1, 3), (7,)])
def test_case_scores_equal_trec_eval_for_the_whole_grid(queries: Queries, ks: tuple[int, ...]) -> None:
    """The hot path used by ``score`` and ``eval`` (one pass per case, one compiled grid with its
    memo shared by every case) over every measure trec_eval has, against trec_eval; a measure
    without a cutoff on the whole run, however small the largest k (runs up to 250 deep)."""
    grid = metric_specs(ks, measures=tuple(TREC))
    expected = {spec.name: trec_values(queries, spec.measure, spec.k) for spec in grid}
    for q, (ranked, gold) in queries.items():
        got = case_scores(ranked, sorted(gold), grid)
        assert set(got) == set(expected)
        for name, values in expected.items():
            assert got[name] == pytest.approx(values[q], abs=TOL, rel=0), (q, name)


def test_case_scores_are_bit_identical_to_the_reference_functions(queries: Queries) -> None:
    """The one-pass grid must not change a single float of the per-measure definitions."""
    grid = metric_specs((1, 2, 3, 5, 7, 10, 20, 100), measures=MEASURES)
    assert {spec.measure for spec in grid} == set(FUNCTIONS)
    for ranked, gold in queries.values():
        got = case_scores(ranked, sorted(gold), grid)
        want = {spec.name: FUNCTIONS[spec.measure](ranked, gold, len(ranked) if spec.k is None else spec.k)
                for spec in grid}
        assert got == want


def test_ndcg_never_exceeds_one(queries: Queries) -> None:
    for ranked, gold in queries.values():
        for k in CUTOFFS:
            assert 0.0 <= FUNCTIONS["ndcg"](ranked, gold, k) <= 1.0


def test_tied_scores_in_a_trec_file_are_ordered_as_trec_eval_orders_them(tmp_path: Path) -> None:
    """Rows in file order with many tied scores (and docids like d9 / d10, where string order
    matters); our loader must rank them as trec_eval does, so the numbers agree."""
    rng = random.Random(5)
    lines, qrels, run = [], {}, {}
    for q in range(200):
        qid = f"q{q}"
        docs = rng.sample([f"d{i}" for i in range(60)], rng.randint(1, 40))
        gold = rng.sample([f"d{i}" for i in range(60)], rng.randint(1, 6))
        qrels[qid] = {g: 1 for g in gold}
        run[qid] = {}
        for rank, doc in enumerate(docs, start=1):
            score = rng.choice([0.5, 1.0, 1.5, 2.0])  # heavy ties; the rank column is ignored
            run[qid][doc] = score
            lines.append(f"{qid} Q0 {doc} {rank} {score} tag")
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")

    loaded = load_run(path)
    grid = metric_specs(CUTOFFS, measures=tuple(TREC))
    spec = ",".join(map(str, CUTOFFS))
    # a ``…_k`` measure at every k; any other on the whole run (every run is shorter than 100), so
    # at k = 100 and at the grid's depth (100)
    names = {n.removesuffix("_k") + f".{spec}" if n.endswith("_k") else n for n in TREC.values()}
    expected = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    checked = 0
    for qid, gold in qrels.items():
        got = case_scores(loaded.rankings[qid].ids, list(gold), grid)
        for metric in grid:
            name = TREC[metric.measure]
            if name.endswith("_k"):
                want = expected[qid][f"{name.removesuffix('_k')}_{metric.k}"]
            elif metric.k in (None, 100):
                want = expected[qid][name]
            else:
                continue
            assert got[metric.name] == pytest.approx(want, abs=TOL, rel=0), (qid, metric.name)
            checked += 1
    assert checked >= len(qrels) * len(TREC)
