"""``retrieval-gate eval`` end to end on examples/: the real bundled model, a real persistent
Chroma store, the console entry point. One cold run (seconds: ~230 chunks), then warm reruns."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
from retrieval_gate.cli import main
from retrieval_gate.load.cases import load_cases
from retrieval_gate.load.kb import load_kb
from tests.conftest import EXAMPLES
from tests.helpers import run_cli

pytestmark = pytest.mark.model

KB = EXAMPLES / "kb"
CASES = EXAMPLES / "cases.jsonl"


@pytest.fixture(scope="module")
def examples() -> tuple[Path, Path]:
    if not (KB.is_dir() and CASES.is_file()):
        pytest.skip("examples/ is not present")
    return KB, CASES


@pytest.fixture(scope="module")
def cold(examples: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One cold exact-search eval into a fresh store; later tests reuse the store."""
    root = tmp_path_factory.mktemp("eval")
    store, out = root / "store", root / "cold.json"
    with pytest.raises(SystemExit) as info:
        main(["eval", "--kb", str(examples[0]), "--cases", str(examples[1]), "--store", str(store),
              "--exact", "--out", str(out)])
    assert info.value.code == 0
    return {"root": root, "store": store, "results": json.loads(out.read_text())}


def test_cold_eval_writes_results_with_fingerprint_latency_and_completeness(cold: dict) -> None:
    r = cold["results"]
    cases = load_cases(CASES).cases
    assert r["completeness"]["expected"] == len(cases)
    assert r["completeness"]["failed"] == 0
    assert r["completeness"]["no_gold"] == sum(1 for c in cases if not c.gold)
    sha, _, backend = r["config"]["model_sha256"].partition("+")  # "+onnx": the vectors' backend (auto)
    assert r["config"]["model"] == "all-MiniLM-L6-v2" and len(sha) == 64 and backend in ("", "onnx")
    assert r["config"]["store"]["search"] == "exact"
    assert r["config"]["chunking"] == {"strategy": "markdown", "size": 1200, "overlap": 150, "by_headings": True}
    assert r["latency"]["n"] == len(cases) and r["latency"]["p95_ms"] >= r["latency"]["p50_ms"] > 0
    emb = r["extras"]["embedding"]
    assert emb["passages_embedded"] == r["extras"]["store"]["chunks"] == r["extras"]["store"]["added"]


def test_numbers_equal_an_independent_plain_sentence_transformers_exact_search(cold: dict) -> None:
    """Plain sentence-transformers + numpy: the stored passage vectors equal plain ``encode``
    (checked on a sample, to keep the test short), the queries are encoded plainly, and an exact
    search with hand-written dedupe, hit@5 and nDCG@10 must give the same top-10 cards per case
    and the same overall numbers."""
    import chromadb
    from chromadb.config import Settings
    from sentence_transformers import SentenceTransformer

    from retrieval_gate.embed.resolve import bundled_model_path

    kb, cases = load_kb(KB), load_cases(CASES).cases
    chunks = {c.id: c for c in chunk_kb(kb, ChunkSettings())}
    client = chromadb.PersistentClient(path=str(cold["store"] / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    (collection,) = client.list_collections()
    stored = collection.get(include=["embeddings", "metadatas"])
    ids = list(stored["ids"])
    assert sorted(ids) == sorted(chunks)
    docs = np.asarray(stored["embeddings"], dtype=np.float32)
    model = SentenceTransformer(str(bundled_model_path()), device="cpu", local_files_only=True)
    sample = ids[::15]
    plain = model.encode([chunks[i].text for i in sample], normalize_embeddings=True, convert_to_numpy=True)
    assert np.allclose(docs[::15], plain, atol=2e-5)
    queries = model.encode([c.query for c in cases], normalize_embeddings=True, convert_to_numpy=True)
    sims = queries @ docs.T
    by_id = {c["id"]: c for c in cold["results"]["cases"]}
    hits5, ndcgs10, near_ties = [], [], 0
    for qi, case in enumerate(cases):
        order = sorted(range(len(ids)), key=lambda j: (-sims[qi, j], ids[j]))
        cards: list[str] = []
        for j in order:
            if chunks[ids[j]].parent_id not in cards:
                cards.append(chunks[ids[j]].parent_id)
            if len(cards) == 10:
                break
        if by_id[case.id]["retrieved"] != cards:  # only allowed where two scores tie to ~1e-6
            near_ties += 1
            top = np.sort(sims[qi])[::-1][:40]
            assert np.min(np.diff(-top)) < 1e-5, case.id
        if case.gold:
            gold = set(case.gold)
            hits5.append(1.0 if gold & set(cards[:5]) else 0.0)
            dcg = sum(1 / math.log2(i + 2) for i, c in enumerate(cards[:10]) if c in gold)
            ndcgs10.append(dcg / sum(1 / math.log2(i + 2) for i in range(min(10, len(gold)))))
    assert near_ties <= 1
    overall = cold["results"]["aggregates"]["overall"]
    assert overall["hit@5"]["value"] == pytest.approx(float(np.mean(hits5)), abs=1e-12)
    assert overall["ndcg@10"]["value"] == pytest.approx(float(np.mean(ndcgs10)), abs=0.01 if near_ties else 1e-9)


def test_warm_rerun_embeds_nothing_never_imports_torch_and_agrees(cold: dict) -> None:
    out = cold["root"] / "warm.json"
    script = ("import sys, json\nfrom retrieval_gate.cli import main\ncode = 0\ntry:\n    main(sys.argv[1:])\n"
              "except SystemExit as e:\n    code = e.code\n"
              "print(json.dumps({'code': code, 'torch': 'torch' in sys.modules}), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", script, "eval", "--kb", str(KB), "--cases", str(CASES),
                           "--store", str(cold["store"]), "--exact", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    status = json.loads(proc.stderr.strip().splitlines()[-1])
    assert status == {"code": 0, "torch": False}, proc.stderr
    warm = json.loads(out.read_text())
    assert warm["extras"]["embedding"]["passages_embedded"] == 0
    assert warm["extras"]["embedding"]["queries_embedded"] == 0
    assert warm["extras"]["store"]["added"] == 0 and warm["extras"]["store"]["deleted"] == 0
    assert warm["aggregates"] == cold["results"]["aggregates"]
    assert "embedded" not in proc.stderr.replace("passages embedded", "")  # no progress lines: nothing to do


def test_hnsw_with_ann_check_reports_recall_against_exact(
    cold: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    out = cold["root"] / "hnsw.json"
    code, stdout, _ = run_cli(["eval", "--kb", str(KB), "--cases", str(CASES), "--store", str(cold["store"]),
                               "--no-exact", "--ann-check", "--out", str(out)], capsys)
    assert code == 0
    r = json.loads(out.read_text())
    assert r["config"]["store"]["search"] == "hnsw"
    assert r["extras"]["ann_check"]["recall"] >= 0.95
    assert r["extras"]["ann_check"]["exact"]["ndcg@5"] == pytest.approx(
        cold["results"]["aggregates"]["overall"]["ndcg@5"]["value"], abs=1e-12)
    assert "ANN check: HNSW returned" in stdout
    # the sample check every HNSW run makes: the real model's vectors, a sound index, no note
    sample = r["extras"]["ann_sample"]
    assert sample["recall"] == 1.0 and sample["note"] is None and sample["seed"] == 57
    assert "ANN check: on " in stdout and "below 0.9" not in stdout


def test_a_changed_and_a_removed_card_re_embed_only_what_changed(
    cold: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = cold["root"] / "kb"
    shutil.copytree(KB, kb)
    files = sorted(kb.rglob("*.md"))
    removed = files[0]
    removed.unlink()
    edited = files[1]
    edited.write_text(edited.read_text() + "\n## Added section\n\nA brand new paragraph about something else.\n")
    # cases whose gold is the removed card would fail integrity: keep the others
    removed_id = next(line.split(":", 1)[1].strip() for line in (KB / removed.relative_to(kb)).read_text().splitlines()
                      if line.startswith("id:"))
    cases = cold["root"] / "cases.jsonl"
    cases.write_text("".join(line + "\n" for line in CASES.read_text().splitlines()
                             if line.strip() and removed_id not in json.loads(line).get("gold", [])))
    out = cold["root"] / "changed.json"
    code, _, err = run_cli(["eval", "--kb", str(kb), "--cases", str(cases), "--store", str(cold["store"]),
                            "--exact", "--out", str(out)], capsys)
    assert code == 0, err
    r = json.loads(out.read_text())
    store = r["extras"]["store"]
    assert 1 <= r["extras"]["embedding"]["passages_embedded"] <= 2  # the new section (and a re-cut neighbour)
    assert store["added"] == r["extras"]["embedding"]["passages_embedded"] + 0
    assert store["deleted"] >= 1
    assert removed_id not in {c for case in r["cases"] for c in case["retrieved"]}


def test_a_corrupted_store_is_rebuilt_with_a_note_and_the_same_numbers(
    cold: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    store = cold["root"] / "corrupt-store"
    shutil.copytree(cold["store"], store)
    (store / "chroma" / "chroma.sqlite3").write_bytes(b"garbage" * 4096)
    out = cold["root"] / "corrupt.json"
    code, _, err = run_cli(["eval", "--kb", str(KB), "--cases", str(CASES), "--store", str(store), "--exact",
                            "--out", str(out)], capsys)
    assert code == 0
    assert "unreadable" in err and "rebuilding" in err
    r = json.loads(out.read_text())
    assert r["extras"]["embedding"]["passages_embedded"] == 0  # the cache survived: only the index was rebuilt
    assert r["aggregates"] == cold["results"]["aggregates"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kb", "no/such/kb", "--cases", str(CASES)], "error: no/such/kb: knowledge base not found"),
        (["--kb", str(KB), "--cases", str(CASES), "--model", "no-such-org/no-such-model"],
         "error: unknown model 'no-such-org/no-such-model'"),
        (["--kb", str(KB), "--cases", str(CASES), "--ephemeral", "--store", "x"],
         "error: --store and --ephemeral exclude each other"),
        (["--kb", str(KB), "--cases", str(CASES), "--chunk-size", "100", "--chunk-overlap", "100"],
         "error: <flags>: chunking: chunk overlap (100) must be smaller than chunk size (100)"),
    ],
)
def test_bad_input_exits_2_with_one_clear_sentence(args: list[str], message: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # never try the network
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["eval", *args, "--out", str(tmp_path / "r.json")], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), err
    assert not (tmp_path / "r.json").exists()


def test_a_gold_id_that_is_no_card_is_scored_as_a_loss_and_named_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gold id the KB does not hold no longer stops the eval: the case is scored (it loses what the
    card would give), stderr names the case's line and the id, and the results record it."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "ok", "query": "refund", "gold": []}\n{"id": "bad", "query": "x", "gold": ["nope"]}\n')
    code, _, err = run_cli(["eval", "--kb", str(KB), "--cases", str(cases), "--store", str(tmp_path / "s"),
                            "--out", str(tmp_path / "r.json")], capsys)
    assert code == 0, err
    assert "warning:" in err and f"{cases}:2:" in err and "'nope'" in err
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["gold_missing"] == {"bad": ["nope"]}
    (bad,) = [c for c in r["cases"] if c["id"] == "bad"]
    assert bad["status"] == "scored" and bad["scores"]["hit@5"] == 0.0
