"""Bit flips, truncation and a Rust panic on copies of a real warm store (chroma.sqlite3 and the
embedding cache): every run gives the clean numbers, or exit 2 with one line and no file."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.faults.conftest import Warm, assert_clean_or_refused, eval_args, numbers, run_cli

pytestmark = pytest.mark.model  # the real bundled model, in a subprocess

CHROMA_DB = Path("chroma") / "chroma.sqlite3"
CACHE = Path("embeddings.sqlite3")


def flip_blob(db: Path, *, table: str, column: str, where: str, bit: int, rows: int = 1) -> int:
    """Flip ``bit`` (0 = lowest bit of the first byte) in the blob of the first ``rows`` rows."""
    conn = sqlite3.connect(db)
    try:
        keys = conn.execute(f"SELECT rowid, {column} FROM {table} WHERE {where} ORDER BY rowid LIMIT ?",
                            (rows,)).fetchall()
        for rowid, blob in keys:
            data = bytearray(blob)
            data[bit // 8] ^= 1 << (bit % 8)
            conn.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", (bytes(data), rowid))
        conn.commit()
        return len(keys)
    finally:
        conn.close()


def eval_on(warm: Warm, store: Path, tmp_path: Path, *extra: str):
    out = tmp_path / f"results-{len(list(tmp_path.glob('results-*')))}.json"
    return run_cli(eval_args(warm.suite, store, out, *extra), cwd=tmp_path), out


# bit 30 of a float32 is the top exponent bit: 0.05 becomes ~1.7e37 (the norm the issue saw);
# bit 31 is the sign: the norm is unchanged, only the checksum beside the vector can tell.
@pytest.mark.parametrize("bit", [30, 31, 3 * 32 + 31, 7 * 32 + 22])
def test_a_flipped_bit_in_a_stored_vector_rebuilds_the_store(warm: Warm, store_copy: Callable[[], Path],
                                                             tmp_path: Path, bit: int) -> None:
    store = store_copy()
    assert flip_blob(store / CHROMA_DB, table="embeddings_queue", column="vector", where="vector IS NOT NULL",
                     bit=bit) == 1
    done, out = eval_on(warm, store, tmp_path)
    assert assert_clean_or_refused(done, out, warm) == "clean"
    assert "failed the check" in done.stderr and "rebuilding" in done.stderr
    again, out2 = eval_on(warm, store, tmp_path)  # the rebuilt store is clean: no note this time
    assert again.returncode == 0 and "failed the check" not in again.stderr
    assert numbers(json.loads(out2.read_text())) == numbers(warm.results)


def test_flips_in_one_percent_of_stored_vectors_never_change_the_numbers(warm: Warm, store_copy: Callable[[], Path],
                                                                         tmp_path: Path) -> None:
    store = store_copy()
    rng = np.random.default_rng(7)
    conn = sqlite3.connect(store / CHROMA_DB)
    rows = conn.execute("SELECT rowid, vector FROM embeddings_queue WHERE vector IS NOT NULL").fetchall()
    for rowid, blob in [rows[i] for i in rng.choice(len(rows), size=max(1, len(rows) // 100), replace=False)]:
        data = bytearray(blob)
        bit = int(rng.integers(0, len(data) * 8))
        data[bit // 8] ^= 1 << (bit % 8)
        conn.execute("UPDATE embeddings_queue SET vector=? WHERE rowid=?", (bytes(data), rowid))
    conn.commit()
    conn.close()
    done, out = eval_on(warm, store, tmp_path)
    assert_clean_or_refused(done, out, warm)


@pytest.mark.parametrize("bit", [30, 31, 100 * 32 + 31])
def test_a_flipped_bit_in_a_cached_vector_is_evicted_and_embedded_again(warm: Warm, store_copy: Callable[[], Path],
                                                                        tmp_path: Path, bit: int) -> None:
    store = store_copy()
    conn = sqlite3.connect(store / CACHE)
    spaces = [r[0] for r in conn.execute("SELECT DISTINCT space FROM vectors ORDER BY space")]
    conn.close()
    assert any(s.endswith(":query") for s in spaces)
    # one query vector and one passage vector: the passage's store row is rebuilt from the cache
    conn = sqlite3.connect(store / CACHE)
    for space in spaces:
        key, blob = conn.execute("SELECT key, vec FROM vectors WHERE space=? ORDER BY key LIMIT 1", (space,)).fetchone()
        data = bytearray(blob)
        data[bit // 8] ^= 1 << (bit % 8)
        conn.execute("UPDATE vectors SET vec=? WHERE space=? AND key=?", (bytes(data), space, key))
    conn.commit()
    conn.close()
    shutil.rmtree(store / "chroma")  # the store is rebuilt from the cache: the bad passage must not reach it
    done, out = eval_on(warm, store, tmp_path)
    assert assert_clean_or_refused(done, out, warm) == "clean"
    assert done.stderr.count("failed the check") == len(spaces), done.stderr
    assert "1 entry failed the check" in done.stderr


@pytest.mark.parametrize("target", [CHROMA_DB, CACHE])
@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_a_truncated_file_gives_the_clean_numbers(warm: Warm, store_copy: Callable[[], Path], tmp_path: Path,
                                                  target: Path, keep: float) -> None:
    store = store_copy()
    path = store / target
    path.write_bytes(path.read_bytes()[:int(path.stat().st_size * keep)])
    done, out = eval_on(warm, store, tmp_path)
    assert_clean_or_refused(done, out, warm)


def test_a_rust_panic_in_chromadb_is_a_store_failure_not_a_failed_gate(warm: Warm, store_copy: Callable[[], Path],
                                                                       tmp_path: Path) -> None:
    store = store_copy()
    conn = sqlite3.connect(store / CHROMA_DB)
    conn.execute("UPDATE migrations SET hash=?", (b"\xff\xfe\xfa",))
    conn.commit()
    conn.close()
    done, out = eval_on(warm, store, tmp_path)
    assert done.returncode in (0, 2), done.stderr
    assert_clean_or_refused(done, out, warm)
    assert "panicked" not in done.stderr  # the Rust panic text only with --debug
