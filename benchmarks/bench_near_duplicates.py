"""Precision and missed merges of the near-duplicate detector on a labelled sample built from
SciFact (``../shared/datasets/scifact``: 5,183 abstracts, title + text).

The labelled sample: 420 abstracts drawn with a fixed seed each get one derived copy, 60 per
edit type — word substitutions at 2, 5, 10, 20 and 30 % (a word replaced by another word of the
same abstract), one sentence deleted, one boilerplate sentence appended. Labels by construction:
an abstract and its copy are a duplicate pair; every other pair is not — the 5,183 originals
are distinct abstracts, and any pair of originals the detector flags is printed so it can be
read and judged by hand (docs/performance.md reports that reading). Over the 5,603 texts the detector
(the audit's own code: word 3-shingles, MinHash, LSH, estimate ≥ threshold) proposes pairs:

- precision = flagged pairs that are labelled duplicates / flagged pairs (false merges corrupt
  gold: two different cards treated as one);
- missed merges per edit type = labelled pairs not flagged / labelled pairs;
- exact-Jaccard check: flagged pairs whose exact shingle Jaccard is below the threshold (MinHash
  estimation error).

A sweep over thresholds and permutation counts prints one row each: the number of hashes and the
Jaccard threshold are tuned on a corpus, not taken on trust (docs/decisions.md, "Near-duplicates: precision
first").

Run: ``python benchmarks/bench_near_duplicates.py``.
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from pathlib import Path

from retrieval_gate.audit.minhash import signatures, similar_pairs
from retrieval_gate.audit.text import WordHasher, shingle_hashes, words

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.reference
from tests.reference import jaccard

DATASET = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "scifact"
if not DATASET.is_dir():
    DATASET = Path("/work/shared/datasets/scifact")
EDITS = ("sub2", "sub5", "sub10", "sub20", "sub30", "drop_sentence", "add_boilerplate")
PER_EDIT = 60
BOILERPLATE = "This article is distributed under the terms of the Creative Commons Attribution License."


def load() -> list[tuple[str, str]]:
    out = []
    with (DATASET / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            out.append((str(doc["_id"]), f"{doc.get('title', '')} {doc['text']}".strip()))
    return out


def edited(text: str, edit: str, rng: random.Random) -> str:
    if edit.startswith("sub"):
        rate = int(edit[3:]) / 100
        ws = text.split()
        for i in range(len(ws)):
            if rng.random() < rate:
                ws[i] = rng.choice(ws)
        return " ".join(ws)
    sentences = re.split(r"(?<=[.!?])\s+", text)
    if edit == "drop_sentence" and len(sentences) > 2:
        del sentences[rng.randrange(1, len(sentences))]
        return " ".join(sentences)
    return f"{text} {BOILERPLATE}"


def main() -> None:
    rng = random.Random(14)
    docs = load()
    sources = rng.sample(range(len(docs)), PER_EDIT * len(EDITS))
    texts = [t for _, t in docs]
    ids = [d for d, _ in docs]
    label: dict[tuple[int, int], str] = {}
    for n, src in enumerate(sources):
        edit = EDITS[n // PER_EDIT]
        label[(src, len(texts))] = edit
        ids.append(f"{ids[src]}~{edit}")
        texts.append(edited(texts[src], edit, rng))
    hasher = WordHasher()
    shingles = [shingle_hashes(hasher(words(t)), 3) for t in texts]
    print(f"{len(docs)} SciFact abstracts + {len(sources)} derived copies ({PER_EDIT} per edit type)")
    print("threshold  perms  flagged  precision  exact-J<thr  missed merges by edit "
          f"({', '.join(EDITS)})  seconds")
    originals_flagged: dict[tuple[int, int], float] = {}
    for num_perm in (64, 128, 256):
        t0 = time.perf_counter()
        sigs = signatures(shingles, num_perm=num_perm, seed=1)
        sig_s = time.perf_counter() - t0
        for threshold in (0.5, 0.6, 0.7, 0.8, 0.9):
            t1 = time.perf_counter()
            pairs = similar_pairs(sigs, threshold=threshold, num_perm=num_perm)
            secs = sig_s + time.perf_counter() - t1
            flagged = {(i, j) for i, j, _ in pairs}
            true = sum(1 for p in flagged if p in label)
            below = sum(1 for i, j in flagged if jaccard(shingles[i], shingles[j]) < threshold)
            missed = {e: sum(1 for p, ed in label.items() if ed == e and p not in flagged) / PER_EDIT for e in EDITS}
            if num_perm == 128 and threshold == 0.8:
                originals_flagged = {(i, j): est for i, j, est in pairs if j < len(docs)}
            precision = true / len(flagged) if flagged else float("nan")
            print(f"{threshold:9.1f}  {num_perm:5d}  {len(flagged):7d}  {precision:9.3f}  {below:11d}  "
                  + " ".join(f"{missed[e]:.2f}" for e in EDITS) + f"  {secs:7.1f}")
    print(f"\npairs of two original abstracts flagged at 0.8 / 128 (to judge by hand): {len(originals_flagged)}")
    for (i, j), est in sorted(originals_flagged.items()):
        print(f"- {ids[i]} ~ {ids[j]} (estimate {est:.2f}, exact {jaccard(shingles[i], shingles[j]):.2f})")
        print(f"    {texts[i][:160]}")
        print(f"    {texts[j][:160]}")


if __name__ == "__main__":
    main()
