"""``score`` as a trec_eval user runs it, on a public graded collection (Cranfield's raw relevance
codes −1…4): a bare qrels file as ``--cases`` (with a ``#`` comment), a TREC run with an extra
trailing column, graded nDCG and ``--rel-level``, and the ``trec`` / ``trec-c`` means — every
per-query value and every overall mean checked against pytrec_eval; ``eval`` refuses a qrels file."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

pytestmark = pytest.mark.datasets

KS = (1, 5, 10, 100)
TREC_NAME = {"ndcg": "ndcg_cut", "recall": "recall", "precision": "P", "map": "map_cut", "hit": "success"}


def graded_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, rel = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(rel)
    return qrels


def write_run(qrels: dict[str, dict[str, int]], docs: list[str], out: Path, seed: int) -> dict[str, dict[str, float]]:
    """100 docs per query, tied scores, judged docs pulled up; a tenth of the queries left out."""
    rng = random.Random(seed)
    run: dict[str, dict[str, float]] = {}
    lines = []
    for qid, judged in qrels.items():
        if rng.random() < 0.1:
            continue
        ranked = rng.sample(docs, 100)
        for doc in judged:
            if rng.random() < 0.6:
                ranked[min(int(rng.expovariate(1 / 8)), 99)] = doc
        for rank, doc in enumerate(dict.fromkeys(ranked), start=1):
            score = round(rng.random() * 5, 1)
            run.setdefault(qid, {})[doc] = score
            lines.append(f"{qid} Q0 {doc} {rank} {score} gen trailing-column")
    out.write_text("\n".join(lines) + "\n")
    return run


def score_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "retrieval_gate", "score", *args],
                          capture_output=True, text=True, check=False, timeout=300)


@pytest.fixture(scope="module")
def cranfield(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    folder = datasets_dir / "cranfield"
    raw = folder / "qrels_raw_codes.tsv"
    if not raw.is_file():
        pytest.skip("cranfield/qrels_raw_codes.tsv is not present")
    tmp = tmp_path_factory.mktemp("cranfield")
    qrels_path = tmp / "qrels.tsv"
    qrels_path.write_text("# Cranfield relevance codes as distributed (-1 … 4)\n" + raw.read_text(encoding="utf-8"))
    qrels = graded_qrels(raw)
    docs = [str(json.loads(line)["_id"]) for line in (folder / "corpus.jsonl").read_text().splitlines() if line]
    run_path = tmp / "run.trec"
    run = write_run(qrels, docs, run_path, seed=7)
    return qrels, run, qrels_path, run_path, tmp


@pytest.mark.parametrize("level", [1, 3])
@pytest.mark.parametrize("mean", ["trec", "trec-c"])
def test_graded_scores_and_means_equal_trec_eval(cranfield, level: int, mean: str) -> None:
    qrels, run, qrels_path, run_path, tmp = cranfield
    out = tmp / f"results-{level}-{mean}.json"
    proc = score_cli("--run", str(run_path), "--cases", str(qrels_path), "--k", ",".join(map(str, KS)),
                     "--rel-level", str(level), "--mean", mean, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())
    assert (results["relevance_level"], results["graded"], results["mean"]) == (level, True, mean)
    assert results["inputs"]["cases"]["format"] == "qrels"

    spec = ",".join(map(str, KS))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"{n}.{spec}" for n in TREC_NAME.values()},
                                               relevance_level=level)
    expected = evaluator.evaluate(run)
    by_id = {c["id"]: c for c in results["cases"]}
    for qid, values in expected.items():
        for k in KS:
            for measure, trec in TREC_NAME.items():
                assert by_id[qid]["scores"][f"{measure}@{k}"] == pytest.approx(values[f"{trec}_{k}"], abs=1e-9)
    # the graded gains matter on this collection: binarised nDCG would differ
    binary = pytrec_eval.RelevanceEvaluator({q: {d: int(g >= 1) for d, g in j.items()} for q, j in qrels.items()},
                                            {"ndcg_cut.10"}).evaluate(run)
    assert max(abs(binary[q]["ndcg_cut_10"] - expected[q]["ndcg_cut_10"]) for q in expected) > 0.05

    universe = list(expected) if mean == "trec" else list(qrels)
    for k in KS:
        for measure, trec in TREC_NAME.items():
            values = [expected[q][f"{trec}_{k}"] if q in expected else 0.0 for q in universe]
            cell = results["aggregates"]["overall"][f"{measure}@{k}"]
            assert cell["n"] == len(universe)
            assert cell["value"] == pytest.approx(sum(values) / len(values), abs=1e-9)


def test_eval_refuses_a_bare_qrels_file_naming_what_it_needs(cranfield, datasets_dir: Path) -> None:
    _, _, qrels_path, _, tmp = cranfield
    proc = subprocess.run([sys.executable, "-m", "retrieval_gate", "eval", "--kb", str(datasets_dir / "cranfield"),
                           "--cases", str(qrels_path), "--retriever", "bm25", "--out", str(tmp / "r.json")],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "needs query text" in proc.stderr and "Traceback" not in proc.stderr
