"""A measure without a cutoff (R-precision) reads the run to its end, as trec_eval does: ``score``
on a 100-deep run with queries of more than 10 relevant documents equals pytrec_eval's ``Rprec``
whatever the largest k, and ``eval`` retrieves at least R cards for each case, so its R-precision
equals pytrec_eval's on a deeper ranking of the same retriever. pytrec_eval is the check."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import pytrec_eval

from retrieval_gate.evaluation.run import run_eval
from retrieval_gate.settings import SuiteConfig
from tests.helpers import run_cli

TOL = 1e-9


def trec_rprec(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    return {q: v["Rprec"] for q, v in pytrec_eval.RelevanceEvaluator(qrels, {"Rprec"}).evaluate(run).items()}


def deep_run(tmp_path: Path, seed: int = 7) -> tuple[Path, Path, dict, dict]:
    """A TREC qrels file (40 queries, 11–40 relevant documents each) and a 100-deep TREC run with
    distinct scores, relevant documents spread over the whole depth."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(400)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        qid = f"q{q}"
        gold = rng.sample(docs, rng.randint(11, 40))
        qrels[qid] = dict.fromkeys(gold, 1)
        ranked = rng.sample(docs, 100)
        for i in range(100):  # relevant documents over-represented, at every depth
            if rng.random() < 0.2:
                pick = rng.choice(gold)
                if pick not in ranked:
                    ranked[i] = pick
        run[qid] = {doc: float(1000 - i) for i, doc in enumerate(ranked)}
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, rels in qrels.items() for d, r in rels.items()))
    run_path = tmp_path / "run.trec"
    run_path.write_text("".join(f"{q} Q0 {d} {i} {s} tag\n" for q, scores in run.items()
                                for i, (d, s) in enumerate(scores.items(), start=1)))
    return qrels_path, run_path, qrels, run


@pytest.mark.parametrize("ks", ["1,3,5,10", "5", "1,3,5,10,100"])
def test_score_reads_the_whole_run_for_r_precision_as_trec_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                ks: str) -> None:
    qrels_path, run_path, qrels, run = deep_run(tmp_path)
    want = trec_rprec(qrels, run)
    # the case the cut at max(k) got wrong: relevant documents past rank 10 within the top R
    assert sum(1 for q in qrels if any(d in qrels[q] for d in list(run[q])[10:len(qrels[q])])) >= 20
    out = tmp_path / "results.json"
    code, _out, err = run_cli(["score", "--run", str(run_path), "--cases", str(qrels_path), "--metrics", "rprec",
                               "--mean", "trec", "--k", ks, "--out", str(out)], capsys)
    assert code == 0, err
    data = json.loads(out.read_text())
    got = {case["id"]: case["scores"]["rprec"] for case in data["cases"]}
    assert set(got) == set(want)
    for qid, value in want.items():
        assert got[qid] == pytest.approx(value, abs=TOL, rel=0), qid
    mean = data["aggregates"]["overall"]["rprec"]["value"]
    assert mean == pytest.approx(sum(want.values()) / len(want), abs=1e-6, rel=0)


WORDS = [f"w{i}" for i in range(60)]


def write_suite(root: Path, seed: int = 3) -> tuple[Path, Path, list[dict]]:
    """60 cards of random words; 12 cases whose gold is 6–25 cards (most more than the largest k)."""
    rng = random.Random(seed)
    kb = root / "kb"
    kb.mkdir(parents=True)
    for i in range(60):
        words = " ".join(rng.sample(WORDS, 8))
        (kb / f"c{i:02d}.md").write_text(f"---\nid: c{i:02d}\ntitle: Card {i}\n---\n# Card {i}\n\n{words}\n")
    cases = [{"id": f"q{j}", "query": " ".join(rng.sample(WORDS, 4)),
              "gold": sorted(rng.sample([f"c{i:02d}" for i in range(60)], rng.randint(6, 25)))} for j in range(12)]
    path = root / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return kb, path, cases


def test_eval_retrieves_at_least_r_cards_for_r_precision(tmp_path: Path) -> None:
    kb, cases_path, cases = write_suite(tmp_path)
    shallow = run_eval(suite_config=SuiteConfig(kb=str(kb), cases=str(cases_path), retriever="bm25", k=(1, 3),
                                                metrics=("hit", "rprec")), suite="t")
    deep = run_eval(suite_config=SuiteConfig(kb=str(kb), cases=str(cases_path), retriever="bm25", k=(60,),
                                             metrics=("hit",)), suite="t")
    qrels = {c["id"]: dict.fromkeys(c["gold"], 1) for c in cases}
    run = {c.id: {card: float(100 - i) for i, card in enumerate(c.retrieved)} for c in deep.cases}
    want = trec_rprec(qrels, run)
    biggest = max(len(c["gold"]) for c in cases)
    assert biggest > 3 and shallow.extras["retrieval_depth"] == biggest
    for case in shallow.cases:
        assert case.scores["rprec"] == pytest.approx(want[case.id], abs=TOL, rel=0), case.id
        assert len(case.retrieved) == 3  # the stored ranking is still cut at the largest k
    assert any(v > 0 for v in want.values())


def test_eval_without_a_cutoff_free_measure_retrieves_to_the_largest_k(tmp_path: Path) -> None:
    kb, cases_path, _cases = write_suite(tmp_path)
    results = run_eval(suite_config=SuiteConfig(kb=str(kb), cases=str(cases_path), retriever="bm25", k=(1, 3)),
                       suite="t")
    assert "retrieval_depth" not in results.extras


def test_the_retrieval_depth_is_the_largest_r_at_the_relevance_level() -> None:
    from retrieval_gate.evaluation.run import retrieval_depth
    from retrieval_gate.models import Case

    cases = [Case(id="a", query="q", gold=tuple(f"g{i}" for i in range(12))),
             Case(id="b", query="q", gold={"x": 2, "y": 2, "z": 1}),
             Case(id="c", query="q", gold=())]
    assert retrieval_depth(cases, ks=(1, 5, 10), whole=False) == 10  # no measure without a cutoff
    assert retrieval_depth(cases, ks=(1, 5, 10), whole=True) == 12
    assert retrieval_depth(cases, ks=(1, 50), whole=True) == 50  # the largest k is deeper already
    assert retrieval_depth(cases[1:], ks=(1,), whole=True, rel_level=2) == 2  # x, y: grade ≥ 2
