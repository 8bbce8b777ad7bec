"""The thresholds of the draft's collapse (``golden.draw.NEAR_COSINE`` and ``TYPO_COSINE``),
measured on real queries: the test queries of SciFact, Cranfield and CISI (../shared/datasets).

- *typos*: each query with one seeded character edit (a substitution, a deletion, an insertion
  or a transposition of neighbours, at a letter inside a word) — the variants a search log holds;
  the share whose embedding cosine with the original (the bundled MiniLM model) is below
  ``NEAR_COSINE`` (the near-duplicate collapse misses them), and the share whose character 3-gram
  TF-IDF cosine reaches each threshold (the typo collapse catches them).
- *distinct*: the real queries of one collection against each other (all different information
  needs): the share of queries that would be merged into another at each threshold — a false merge.

Usage: nice python benchmarks/bench_typo_collapse.py   (prints one JSON line)
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

from retrieval_gate.golden.draw import NEAR_COSINE, TYPO_COSINE
from retrieval_gate.golden.log_clean import normalise

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
if not DATA.is_dir():
    DATA = Path("/work/shared/datasets")
THRESHOLDS = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def typo(text: str, rng: random.Random) -> str:
    spots = [i for i in range(1, len(text) - 1) if text[i].isalpha() and text[i - 1].isalpha()]
    i = rng.choice(spots)
    kind = rng.choice(("sub", "del", "ins", "swap"))
    if kind == "sub":
        return text[:i] + rng.choice([c for c in LETTERS if c != text[i]]) + text[i + 1:]
    if kind == "del":
        return text[:i] + text[i + 1:]
    if kind == "ins":
        return text[:i] + rng.choice(LETTERS) + text[i:]
    j = i if text[i + 1].isalpha() else i - 1
    return text[:j] + text[j + 1] + text[j] + text[j + 2:]


def grams(texts: list[str]):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True, sublinear_tf=True,
                           dtype=np.float32).fit_transform(texts).tocsr()


def main() -> dict:
    from sentence_transformers import SentenceTransformer

    from retrieval_gate.embed.resolve import bundled_model_path

    rng = random.Random(0)
    per: dict[str, dict] = {}
    originals, variants = [], []
    for name in ("scifact", "cranfield", "cisi"):
        lines = (DATA / name / "queries.jsonl").read_text().splitlines()
        texts = [normalise(json.loads(line)["text"]) for line in lines]
        texts = [t for t in dict.fromkeys(texts) if len(t) >= 8]
        g = grams(texts)
        sims = (g @ g.T).toarray()
        np.fill_diagonal(sims, 0.0)
        best = sims.max(axis=1)
        per[name] = {"queries": len(texts), "false_merge_share": {f"{t:g}": round(float((best >= t).mean()), 4)
                                                                  for t in THRESHOLDS}}
        for t in texts:
            originals.append(t)
            variants.append(typo(t, rng))
    g = grams(originals + variants)
    n = len(originals)
    char = np.asarray(g[:n].multiply(g[n:]).sum(axis=1)).ravel()
    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    a = model.encode(originals, normalize_embeddings=True, batch_size=64)
    b = model.encode(variants, normalize_embeddings=True, batch_size=64)
    dense = np.sum(np.asarray(a) * np.asarray(b), axis=1)
    missed = dense < NEAR_COSINE
    return {"typos": n, "dense_below_near_cosine": round(float(missed.mean()), 4), "near_cosine": NEAR_COSINE,
            "typo_cosine": TYPO_COSINE,
            "typo_caught_share": {f"{t:g}": round(float((char >= t).mean()), 4) for t in THRESHOLDS},
            "typo_caught_among_dense_missed": {f"{t:g}": round(float((char[missed] >= t).mean()), 4) if missed.any()
                                               else None for t in THRESHOLDS},
            "distinct": per}


if __name__ == "__main__":
    print(json.dumps(main(), sort_keys=True))
    sys.exit(0)
