"""Shingling, MinHash/LSH pairs and clusters of the audit, on hand-worked sets."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.audit.minhash import components, signatures, similar_pairs
from retrieval_gate.audit.text import WordHasher, char_shingles, hash32, normalise, shingle_hashes, words
from tests.reference import jaccard


@pytest.mark.parametrize(("text", "expected"), [
    ("Hello, WORLD!", ["hello", "world"]),
    ("Ação   rápida", ["ação", "rápida"]),
    ("  ", []),
])
def test_words_are_casefolded_unicode_runs(text, expected):
    assert words(text) == expected


def test_normalise_joins_words_with_one_space():
    assert normalise("How do I  reset my PASSWORD?") == "how do i reset my password"


@pytest.mark.parametrize(("text", "size", "n_shingles"), [
    ("a b c d", 3, 2),  # "a b c", "b c d"
    ("a b a b a", 2, 2),  # "a b" and "b a", each repeated
    ("a b", 3, 1),  # shorter than the size: one shingle of all words
    ("", 3, 0),
])
def test_shingle_count(text, size, n_shingles):
    assert len(shingle_hashes(WordHasher()(words(text)), size)) == n_shingles


def test_a_shingle_is_its_words_in_order():
    hasher = WordHasher()
    abc = shingle_hashes(hasher(["a", "b", "c"]), 3)
    cba = shingle_hashes(hasher(["c", "b", "a"]), 3)
    assert len(abc) == len(cba) == 1 and abc[0] != cba[0]


def test_word_hash_is_stable_across_processes():
    # blake2b, 4 bytes, little-endian: worked out once with hashlib, not with the code under test
    import hashlib

    assert hash32("refund") == int.from_bytes(hashlib.blake2b(b"refund", digest_size=4).digest(), "little")


def test_char_shingles_of_a_short_query():
    # "ab c" → 2-grams "ab", "b ", " c"
    assert len(char_shingles("AB c", 2)) == 3


@pytest.mark.parametrize(("a", "b", "expected"), [
    ([1, 2, 3], [2, 3, 4], 0.5),  # |∩| = 2, |∪| = 4
    ([1, 2], [3, 4], 0.0),
    ([], [], 1.0),
])
def test_exact_jaccard(a, b, expected):
    assert jaccard(np.array(a, dtype=np.uint32), np.array(b, dtype=np.uint32)) == expected


def test_identical_sets_pair_at_one_and_empty_sets_never_pair():
    sets = [np.arange(50, dtype=np.uint32), np.arange(50, dtype=np.uint32), np.zeros(0, dtype=np.uint32),
            np.arange(1000, 1050, dtype=np.uint32)]
    sigs = signatures(sets, num_perm=128, seed=1)
    assert sigs[2] is None
    assert similar_pairs(sigs, threshold=0.8, num_perm=128) == [(0, 1, 1.0)]


@pytest.mark.parametrize(("overlap", "paired"), [
    (1000, True),  # J = 1000/1000... identical
    (900, True),  # a = 0..999, b = 100..1099: J = 900/1100 = 0.818 ≥ 0.8
    (600, False),  # J = 600/1400 = 0.43
])
def test_pairs_follow_the_true_jaccard(overlap, paired):
    a = np.arange(0, 1000, dtype=np.uint32)
    b = np.arange(1000 - overlap, 2000 - overlap, dtype=np.uint32)
    sigs = signatures([a, b], num_perm=256, seed=3)
    pairs = similar_pairs(sigs, threshold=0.75, num_perm=256)
    assert bool(pairs) is paired
    if paired:
        true = overlap / (2000 - overlap)
        assert abs(pairs[0][2] - true) < 0.1  # 4 standard errors at 256 permutations


def test_signatures_are_deterministic_for_a_seed():
    s = [np.arange(100, dtype=np.uint32)]
    one = signatures(s, num_perm=64, seed=5)[0]
    two = signatures(s, num_perm=64, seed=5)[0]
    other = signatures(s, num_perm=64, seed=6)[0]
    assert one is not None and two is not None and other is not None
    assert np.array_equal(one.hashvalues, two.hashvalues)
    assert not np.array_equal(one.hashvalues, other.hashvalues)


def test_components_link_chains_and_drop_singletons():
    pairs = [(0, 1, 0.9), (1, 2, 0.85), (4, 5, 1.0)]
    assert components(6, pairs) == [[0, 1, 2], [4, 5]]


def test_batched_signatures_equal_datasketch_one_minhash_per_set():
    from datasketch import MinHash

    from retrieval_gate.audit import minhash

    rng = np.random.default_rng(0)
    sets = [np.unique(rng.integers(0, 2**32, size=n, dtype=np.uint64)).astype(np.uint32) for n in (1, 5, 300, 0, 40)]
    batched = signatures(sets, num_perm=64, seed=9)
    for values, sig in zip(sets, batched, strict=True):
        if len(values) == 0:
            assert sig is None
            continue
        m = MinHash(num_perm=64, seed=9, hashfunc=int, scheme=minhash.SCHEME)
        m.update_batch(values.tolist())
        assert sig is not None and np.array_equal(sig.hashvalues, m.hashvalues)


def test_batches_split_anywhere_give_the_same_signatures(monkeypatch):
    from retrieval_gate.audit import minhash

    sets = [np.arange(i, i + 30, dtype=np.uint32) for i in range(0, 300, 10)]
    whole = signatures(sets, num_perm=32, seed=2)
    monkeypatch.setattr(minhash, "BATCH_SHINGLES", 45)
    split = signatures(sets, num_perm=32, seed=2)
    assert all(np.array_equal(x.hashvalues, y.hashvalues) for x, y in zip(whole, split, strict=True))
