"""``retrieval-gate score`` end to end on real test collections (../shared/datasets, BEIR layout)
with a generated TREC run, cross-checked against pytrec_eval on the same file; determinism."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

pytestmark = pytest.mark.datasets

KS = (1, 3, 5, 10, 100)
TREC_NAME = {"ndcg": "ndcg_cut", "recall": "recall", "precision": "P", "map": "map_cut", "hit": "success"}


def read_ids(path: Path, key: str = "_id") -> list[str]:
    with path.open(encoding="utf-8") as handle:
        return [str(json.loads(line)[key]) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, rel = line.split("\t")
        if int(rel) >= 1:
            qrels.setdefault(qid, {})[doc] = int(rel)
    return qrels


def write_run(folder: Path, out: Path, seed: int) -> tuple[set[str], str]:
    """A TREC run of 100 docs per query with heavily tied scores (one decimal) and a rank column
    that disagrees with the scores; a tenth of the queries left out; one query id that is not in
    the set. Returns the left-out ids and the stray id."""
    rng = random.Random(seed)
    docs = read_ids(folder / "corpus.jsonl")
    qrels = read_qrels(folder / "qrels.tsv")
    lines, left_out = [], set()
    for qid in read_ids(folder / "queries.jsonl"):
        if rng.random() < 0.1:
            left_out.add(qid)
            continue
        ranked = rng.sample(docs, 100)
        for gold in qrels.get(qid, {}):
            if rng.random() < 0.7:
                ranked[min(int(rng.expovariate(1 / 6)), 99)] = gold
        for rank, doc in enumerate(dict.fromkeys(ranked), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {round(rng.random() * 5, 1)} gen")
    stray = "not-a-query"
    lines.append(f"{stray} Q0 {docs[0]} 1 1.0 gen")
    out.write_text("\n".join(lines) + "\n")
    return left_out, stray


def trec_run_dict(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def score_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "retrieval_gate", "score", *args],
                          capture_output=True, text=True, check=False, timeout=300)


@pytest.mark.parametrize("name", ["scifact", "cisi", "cranfield"])
def test_score_matches_pytrec_eval_on_a_real_collection(name: str, datasets_dir: Path, tmp_path: Path) -> None:
    folder = datasets_dir / name
    run_path = tmp_path / "run.trec"
    left_out, stray = write_run(folder, run_path, seed=len(name))
    out = tmp_path / "results.json"
    proc = score_cli("--run", str(run_path), "--cases", str(folder), "--kb", str(folder),
                     "--k", ",".join(map(str, KS)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    results = json.loads(out.read_text())

    qrels = read_qrels(folder / "qrels.tsv")
    run = trec_run_dict(run_path)
    spec = ",".join(map(str, KS))
    measures = {f"{n}.{spec}" for n in TREC_NAME.values()}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    recip = {k: pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(
        {q: dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:k]) for q, docs in run.items()})
        for k in KS}

    by_id = {c["id"]: c for c in results["cases"]}
    n_queries = len(read_ids(folder / "queries.jsonl"))
    assert len(by_id) == n_queries
    compared = 0
    for qid, case in by_id.items():
        if qid not in qrels:  # no judgments: no score keys, its own slice
            assert case["scores"] == {} and "no-answer" in case["slices"]
            continue
        if qid in left_out:
            assert case["status"] == "failed" and case["error"] == "missing from the run"
            assert set(case["scores"].values()) == {0.0}
            continue
        for k in KS:
            for measure, trec in TREC_NAME.items():
                assert case["scores"][f"{measure}@{k}"] == pytest.approx(expected[qid][f"{trec}_{k}"], abs=1e-9)
            assert case["scores"][f"mrr@{k}"] == pytest.approx(recip[k][qid]["recip_rank"], abs=1e-9)
        compared += 1
    assert compared > 0.8 * len(qrels) - len(left_out)

    # overall = mean over every query with judgments, a missing one counting 0 (trec_eval -c)
    for k in KS:
        for measure, trec in TREC_NAME.items():
            values = [expected[q][f"{trec}_{k}"] if q in expected else 0.0 for q in qrels]
            cell = results["aggregates"]["overall"][f"{measure}@{k}"]
            assert cell["n"] == len(qrels)
            assert cell["value"] == pytest.approx(sum(values) / len(values), abs=1e-9)

    completeness = results["completeness"]
    assert completeness["expected"] == n_queries
    assert completeness["failed"] == len(left_out) and sorted(completeness["failed_ids"]) == sorted(left_out)
    assert completeness["no_gold"] == n_queries - len(qrels) - len(left_out - set(qrels))
    assert completeness["unknown_run_ids"] == [stray]
    assert results["inputs"]["kb"]["format"] == "beir" and results["inputs"]["run"]["format"] == "trec"
    assert "overall" in proc.stdout and "failed" in proc.stdout


def test_same_inputs_give_byte_identical_results_apart_from_created_at(datasets_dir: Path, tmp_path: Path) -> None:
    folder = datasets_dir / "scifact"
    run_path = tmp_path / "run.trec"
    write_run(folder, run_path, seed=1)
    outputs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        proc = score_cli("--run", str(run_path), "--cases", str(folder), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        outputs.append(out.read_text(encoding="utf-8"))
    stripped = [[ln for ln in text.splitlines() if '"created_at"' not in ln] for text in outputs]
    assert stripped[0] == stripped[1]
    assert sum('"created_at"' in ln for ln in outputs[0].splitlines()) == 1


def test_jsonl_run_scores_the_same_as_the_trec_run(datasets_dir: Path, tmp_path: Path) -> None:
    """The same rankings as TREC and as JSONL (already in trec_eval order) give the same scores."""
    folder = datasets_dir / "scifact"
    trec_path = tmp_path / "run.trec"
    write_run(folder, trec_path, seed=3)
    run = trec_run_dict(trec_path)
    jsonl_path = tmp_path / "run.jsonl"
    with jsonl_path.open("w") as handle:
        for qid, docs in run.items():
            ordered = sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            handle.write(json.dumps({"id": qid, "retrieved": [d for d, _ in ordered]}) + "\n")
    results = []
    for path in (trec_path, jsonl_path):
        out = tmp_path / f"{path.suffix}.json"
        proc = score_cli("--run", str(path), "--cases", str(folder), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(out.read_text()))
    assert results[0]["aggregates"] == results[1]["aggregates"]
    assert [c["scores"] for c in results[0]["cases"]] == [c["scores"] for c in results[1]["cases"]]
