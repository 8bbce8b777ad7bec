"""The HNSW path checks what it can afford on every run: a seeded sample of the queries searched
exactly (streamed over the stored vectors) against the index's answer. A graph whose level-0
neighbour lists were all rewritten with valid ids passes every file check (``hnsw_damage``) and
answers wrong: the check's recall falls and the run carries a note, in its results and on the
terminal. Real chromadb, a store big enough to have flushed its HNSW files; a fake of our
Embedder (hashed bag of words). The exact side is held to ``DenseRetriever`` over an
``ExactIndex`` of the same rows, the independent brute force."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.cli.eval import summary_lines
from retrieval_gate.evaluation.ann_check import MIN_RECALL, SAMPLE_QUERIES, sample_of
from retrieval_gate.evaluation.run import run_eval
from retrieval_gate.retrieve.dense import DenseRetriever
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.chroma_index import exact_top_cards
from retrieval_gate.store.folder import hnsw_damage
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import HashEmbedder, bag_of_words
from tests.integration.test_dense_store import Session

VOCAB = [f"w{i}" for i in range(700)]


def write_suite(root: Path, cards: int = 2400, cases: int = 150) -> tuple[Path, Path]:
    """JSONL cards of 12 random words (one chunk each, two cards in five sharing a ``team``) and
    cases whose query is 6 words of one card, that card their gold; every fifth case filtered."""
    rng = random.Random(11)
    texts = {f"card{i:05d}": " ".join(rng.sample(VOCAB, 12)) for i in range(cards)}
    kb = root / "kb.jsonl"
    kb.write_text("".join(json.dumps({"id": cid, "text": text, "metadata": {"team": "a" if i % 5 < 2 else "b"}}) + "\n"
                          for i, (cid, text) in enumerate(texts.items())))
    rows = []
    for j, cid in enumerate(rng.sample(sorted(texts), cases)):
        case = {"id": f"q{j}", "query": " ".join(rng.sample(texts[cid].split(), 6)), "gold": [cid]}
        if j % 5 == 0:
            case["filter"] = {"team": {"$in": ["a", "b"]}}
        rows.append(json.dumps(case) + "\n")
    path = root / "cases.jsonl"
    path.write_text("".join(rows))
    return kb, path


def scramble_level0(chroma: Path, seed: int = 3) -> int:
    """Rewrite every level-0 neighbour list of every HNSW segment with random ids of existing
    elements (each list keeps its length): a graph no file check can tell from a sound one."""
    rng = np.random.default_rng(seed)
    done = 0
    for header in chroma.glob("*/header.bin"):
        raw = header.read_bytes()
        _version, _offset, _capacity, count, per_element = struct.unpack_from("<IQQQQ", raw, 0)
        max_m0 = struct.unpack_from("<Q", raw, 68)[0]
        data = header.parent / "data_level0.bin"
        rows = np.fromfile(data, dtype=np.uint8).reshape(-1, per_element)
        links = rows[:count, :4 + 4 * max_m0].copy().view(np.uint32)
        degree = links[:, 0] & 0xFFFF
        for i in range(count):
            links[i, 1:1 + degree[i]] = rng.integers(0, count, size=degree[i], dtype=np.uint32)
        rows[:count, :4 + 4 * max_m0] = links.view(np.uint8)
        rows.tofile(data)
        done += count
    return done


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("ann")
    kb, cases = write_suite(root)
    return root, kb, cases


def evaluate(kb: Path, cases: Path, store: Path, **store_settings: object):
    config = SuiteConfig(kb=str(kb), cases=str(cases), store=StoreSettings(path=str(store), **store_settings),
                         k=(1, 5, 10))
    return run_eval(suite_config=config, suite="t", embedder=HashEmbedder())


def test_a_sound_hnsw_run_checks_a_seeded_sample_and_carries_no_note(suite: tuple[Path, Path, Path]) -> None:
    root, kb, cases = suite
    results = evaluate(kb, cases, root / "sound", exact=False)
    sample = results.extras["ann_sample"]
    assert results.config["store"]["search"] == "hnsw"
    assert (sample["sampled"], sample["queries"], sample["k"]) == (SAMPLE_QUERIES, SAMPLE_QUERIES, 10)
    assert min(sample["recall_at"].values()) >= MIN_RECALL and sample["note"] is None
    assert set(sample["recall_at"]) == {"1", "5", "10"} and sample["recall_at"]["10"] == sample["recall"]
    assert sample_of(150) == sample_of(150) and len(set(sample_of(150))) == SAMPLE_QUERIES  # seeded
    assert "ann_sample_s" in results.extras["timings"]
    assert any(line.startswith("ANN check: on 100 sampled queries") for line in summary_lines(results))
    exact = evaluate(kb, cases, root / "exact", exact=True)
    assert "ann_sample" not in exact.extras  # exact search needs no check


def test_a_graph_rewritten_with_valid_ids_passes_the_file_checks_and_the_sample_note_fires(
        suite: tuple[Path, Path, Path]) -> None:
    root, kb, cases = suite
    store = root / "damaged"
    sound = evaluate(kb, cases, store, exact=False)
    assert sound.extras["ann_sample"]["note"] is None
    assert scramble_level0(store / "chroma") >= 2000
    assert hnsw_damage(store / "chroma") is None  # every file check passes
    damaged = evaluate(kb, cases, store, exact=False)
    sample = damaged.extras["ann_sample"]
    assert sample["queries_differing"] > 0
    worst = min(sample["recall_at"].values())
    assert worst < MIN_RECALL
    assert sample["note"].startswith(f"ANN check: on 100 sampled queries, the HNSW index returned {worst:.3f} of")
    assert "--exact" in sample["note"]
    assert sample["note"] in summary_lines(damaged)
    # the wrong numbers the note warns of: hit@10 below the sound index's
    assert damaged.aggregates["overall"]["hit@10"].value < sound.aggregates["overall"]["hit@10"].value


@pytest.mark.parametrize("page", [7, 100, 10_000])
def test_streamed_exact_search_is_the_exact_index_answer(tmp_path: Path, page: int) -> None:
    """Several chunks a card, tied scores, filters, pages smaller than k: each query's top cards
    equal ``DenseRetriever`` over an ``ExactIndex`` of the same rows."""
    rng = random.Random(5)
    from retrieval_gate.chunk.chunking import make_chunk

    words = VOCAB[:40]
    chunks = [make_chunk(id=f"c{i:04d}", parent_id=f"card{i // 3:03d}", position=i % 3,
                         text=" ".join(rng.sample(words, 5)), metadata={"team": "a" if i % 4 else "b", "n": i % 7})
              for i in range(600)]
    s = Session(tmp_path / "s", exact=True)
    s.sync(chunks)
    queries = [" ".join(rng.sample(words, 3)) for _ in range(40)]
    vectors = np.stack([bag_of_words(q) for q in queries])
    wheres = [None, {"team": "b"}, {"n": {"$gte": 3}}, {"$or": [{"team": "b"}, {"n": 0}]}] * 10
    want = DenseRetriever(index=s.store.index(exact=True), embedder=s.embedder, overfetch=1).rank(vectors, 10, wheres)
    got = exact_top_cards(s.store._collection, vectors, 10, wheres, page=page)
    assert [[card for card, _score in cards] for cards in got] == [list(r.ids) for r in want]
    assert [[round(score, 5) for _card, score in cards] for cards in got] == [[round(v, 5) for v in r.scores]
                                                                              for r in want]
    assert s.store.exact_cards(vectors, 10, wheres) == got
    s.close()


def test_sample_recall_by_hand() -> None:
    from retrieval_gate.evaluation.ann_check import sample_recall

    exact = [[("a", 0.9), ("b", 0.8), ("c", 0.5)], [("x", 0.7), ("y", 0.6)], []]
    hnsw = [[("a", 0.9), ("d", 0.5), ("b", 0.8)],  # d ties the exact 3rd score: as good an answer
            [("z", 0.1), ("x", 0.7)],
            [("q", 0.3)]]  # nothing passes the filter exactly: left out
    assert sample_recall(hnsw, exact, 3) == (round((3 / 3 + 1 / 2) / 2, 6), 2)
    assert sample_recall(hnsw, exact, 1) == ((1 / 1 + 0 / 1) / 2, 2)  # x is not the HNSW top 1
    assert sample_recall([[("b", 0.9 - 2e-5)]], [[("a", 0.9)]], 1) == (0.0, 1)  # beyond the float32 tie
    assert sample_recall([[("a", 0.9 - 2e-5)]], [[("a", 0.9)]], 1) == (1.0, 1)  # the same card, whatever its score
