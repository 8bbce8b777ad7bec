"""Sharded embedding (``embed --shard I/N`` + ``eval --cache-from``): shards split the work
without overlap, hand the model the very batches a single process would, and an eval fed by
them embeds nothing and gives the single process's results. Real Chroma (ephemeral), a fake of
our Embedder interface that records every call."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.cli import main
from retrieval_gate.embed.base import ModelIdentity
from retrieval_gate.embed.cache import SLICE_SIZE, CachedEmbedder, EmbeddingCache
from retrieval_gate.embed.resolve import ModelRef
from retrieval_gate.embed.sentence import SentenceTransformerEmbedder, resolve_device
from retrieval_gate.embed.shards import import_shards, parse_shard, shard_texts
from retrieval_gate.errors import InputError, UsageError
from retrieval_gate.evaluation.embed_shard import embed_shard
from retrieval_gate.evaluation.run import run_evals
from retrieval_gate.files import dumps_json
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.store.settings import StoreSettings
from tests.fake_embedder import HashEmbedder
from tests.reference import without_run_specific_fields

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class RecordingEmbedder(HashEmbedder):
    """Records each call's texts, in order, as the model would receive them."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("document", tuple(texts)))
        return super().embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("query", tuple(texts)))
        return super().embed_queries(texts)


def write_dataset(root: Path, *, n_cards: int = 700, n_cases: int = 300, seed: int = 5) -> SuiteConfig:
    """JSONL cards (embedded whole: one chunk each) of varied lengths, with some repeated texts."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    cards = []
    for i in range(n_cards):
        text = " ".join(rng.choices(words, k=rng.randint(3, 60))) if i % 50 else "repeated card text"
        cards.append({"id": f"c{i}", "title": "", "text": text})
    cases = [{"id": f"q{i}", "query": " ".join(rng.choices(words, k=rng.randint(2, 12))),
              "gold": [f"c{rng.randrange(n_cards)}"]} for i in range(n_cases)]
    (root / "kb.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cards))
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return SuiteConfig(kb=str(root / "kb.jsonl"), cases=str(root / "cases.jsonl"),
                       store=StoreSettings(mode="ephemeral"))


def comparable(results: Any) -> str:
    """Results JSON without the fields that say when, how fast and what was embedded where."""
    return dumps_json(without_run_specific_fields(results.to_json_data()))


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_shards_split_the_distinct_texts_without_overlap_and_in_embedding_order(count: int) -> None:
    rng = random.Random(count)
    texts = ["x" * rng.randint(1, 40) + str(rng.randrange(300)) for _ in range(1000)]
    parts = [shard_texts(texts, index=i, count=count, slice_size=16) for i in range(1, count + 1)]
    flat = [t for part in parts for t in part]
    assert len(flat) == len(set(flat)) == len(set(texts))  # every distinct text once
    assert shard_texts(list(reversed(texts)), index=1, count=count, slice_size=16) == parts[0]  # order-free
    if count > 1:  # round robin over slices: sizes within one slice of each other
        assert max(map(len, parts)) - min(map(len, parts)) <= 16


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "2", "1/0", "-1/2"])
def test_a_bad_shard_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


@pytest.mark.parametrize("count", [2, 4])
def test_shards_give_the_model_the_single_process_batches_and_the_eval_embeds_nothing(
        tmp_path: Path, count: int) -> None:
    suite_config = write_dataset(tmp_path)
    single_embedder = RecordingEmbedder()
    single = run_evals(suite_config=suite_config, suite="t", embedder=single_embedder)["dense"]

    shard_calls: list[tuple[str, tuple[str, ...]]] = []
    folders = []
    for index in range(1, count + 1):
        embedder = RecordingEmbedder()
        folder = tmp_path / "shards" / f"s{index}"
        manifest = embed_shard(suite_config=suite_config, shard=(index, count), out=folder, embedder=embedder)
        assert manifest["shard"] == f"{index}/{count}"
        shard_calls.extend(embedder.calls)
        folders.append(folder)
    # The same calls (texts, in order, per call) as the single process made: the same vectors.
    assert sorted(shard_calls) == sorted(single_embedder.calls)
    assert len(single_embedder.calls) > count  # more slices than shards: every shard had work

    fed = RecordingEmbedder()
    sharded = run_evals(suite_config=suite_config, suite="t", embedder=fed, cache_from=[tmp_path / "shards"])["dense"]
    assert fed.calls == []  # nothing embedded: the shards held every passage and query
    assert sharded.extras["embedding"]["shards"] == {"folders": count, "imported": 700 - 14 + 1 + 300,
                                                     "other_spaces": 0}
    assert comparable(sharded) == comparable(single)


def test_a_shard_of_another_model_is_left_out_and_its_texts_embedded_here(tmp_path: Path) -> None:
    suite_config = write_dataset(tmp_path, n_cards=40, n_cases=10)
    embed_shard(suite_config=suite_config, shard=(1, 1), out=tmp_path / "other", embedder=HashEmbedder(sha256="a" * 64))
    fed = RecordingEmbedder()
    results = run_evals(suite_config=suite_config, suite="t", embedder=fed, cache_from=[tmp_path / "other"])["dense"]
    assert results.extras["embedding"]["shards"]["imported"] == 0
    assert results.extras["embedding"]["shards"]["other_spaces"] == 40 - 1 + 1 + 10
    assert results.extras["embedding"]["passages_embedded"] == 40 - 1 + 1


@pytest.mark.parametrize("kind", ["missing", "not-sqlite", "other-schema"])
def test_a_bad_shard_folder_is_an_input_error_naming_it(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "shard"
    folder.mkdir()
    if kind == "not-sqlite":
        (folder / "embeddings.sqlite3").write_text("hello")
    elif kind == "other-schema":
        conn = sqlite3.connect(folder / "embeddings.sqlite3")
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
        conn.execute("CREATE TABLE vectors (space TEXT, key TEXT, vec BLOB)")
        conn.execute("INSERT INTO meta VALUES ('schema', '0')")
        conn.commit()
        conn.close()
    with pytest.raises(InputError) as info:
        import_shards(EmbeddingCache(), [folder], spaces=["s:document"])
    assert str(folder) in str(info.value)


def test_import_reads_a_shard_without_changing_it(tmp_path: Path) -> None:
    unit = np.ones(3, dtype=np.float32) / np.float32(np.sqrt(3))  # the cache gives back unit vectors only
    source = EmbeddingCache(tmp_path / "s" / "embeddings.sqlite3")
    source.put_many("m:document", [("k1", unit)])
    source.put_many("x:document", [("k2", unit)])
    source.seal()
    before = (tmp_path / "s" / "embeddings.sqlite3").read_bytes()
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["embeddings.sqlite3"]  # one self-contained file
    target = EmbeddingCache()
    report = import_shards(target, [tmp_path / "s"], spaces=["m:document"])
    assert (report.imported, report.other) == (1, 1)
    assert np.array_equal(target.get_many("m:document", ["k1"])["k1"], unit)
    assert (tmp_path / "s" / "embeddings.sqlite3").read_bytes() == before


def test_cached_embedder_orders_missing_texts_by_length_then_key() -> None:
    inner = RecordingEmbedder()
    texts = ["bb", "a", "cc", "dd", "eee"]
    CachedEmbedder(inner, EmbeddingCache(), slice_size=SLICE_SIZE).embed_documents(texts)
    (_, sent), = inner.calls
    assert sent[0] == "eee" and sorted(sent[1:4]) == ["bb", "cc", "dd"] and sent[4] == "a"
    assert list(sent) == shard_texts(texts, index=1, count=1)


def test_device_class_keys_non_cpu_vectors_apart() -> None:
    ref = ModelRef(name="m", path=Path("."), source="local", sha256="s" * 64)
    assert SentenceTransformerEmbedder(ref).identity() == ModelIdentity(name="m", sha256="s" * 64)
    assert SentenceTransformerEmbedder(ref, device="cpu").identity().sha256 == "s" * 64
    assert SentenceTransformerEmbedder(ref, device="cuda").identity().sha256 == "s" * 64 + "+cuda"
    assert resolve_device(None) == "cpu"
    with pytest.raises(UsageError):
        resolve_device("tpu")


def test_the_embed_command_writes_a_shard_folder_and_refuses_a_bad_shard(tmp_path: Path, capsys) -> None:
    # The example suite (229 chunks, 62 queries) fits one slice: shard 2/2 has nothing to embed,
    # so this runs without loading the model.
    out = tmp_path / "shard2"
    with pytest.raises(SystemExit) as info:
        main(["embed", "--kb", str(EXAMPLES / "kb"), "--cases", str(EXAMPLES / "cases.jsonl"),
              "--shard", "2/2", "--out", str(out)])
    assert info.value.code in (0, None)
    manifest = json.loads((out / "shard.json").read_text())
    assert (manifest["shard"], manifest["passages"], manifest["queries"]) == ("2/2", 0, 0)
    assert (out / "embeddings.sqlite3").is_file()
    with pytest.raises(SystemExit) as info:
        main(["embed", "--kb", str(EXAMPLES / "kb"), "--cases", str(EXAMPLES / "cases.jsonl"),
              "--shard", "3/2", "--out", str(out)])
    assert info.value.code == 2
    assert "--shard '3/2'" in capsys.readouterr().err
