"""Masking a query log (``golden.masking``), measured by kind (docs/golden-set.md, "Secrets and
personal data").

1. **The battery** (benchmarks/data/pii_battery.tsv): every variant — kind, region, the text with
   the item between ⟦ ⟧; ``\\uXXXX`` stands for an invisible character — through
   ``golden.masking.Masker`` with the line's region, and again with the default region (a log
   drafted without ``--region``). A variant is masked when a ``<kind>`` of its kind stands in the
   output and no piece of the item is left: no run of 4+ letters or digits of the item as written,
   of its NFKC form, or of its percent-decoded form. ``none`` variants must come out unchanged.
   The same for benchmarks/data/pii_heldout.tsv: 46 variants written after the detectors were
   tuned on the battery (its first run: 15 of 15 secrets, 30 of 31 identifiers — "nasceu em" was
   no birth word; then fixed).
2. **Planted keys** (200 of each family, seeded): AWS secret access keys (30 random bytes in
   base64: 40 characters of ``A-Za-z0-9+/``), Azure storage account keys (64 bytes: 88 characters
   ending ``==``), 32-byte base64 secrets (44 characters ending ``=``), the same with ``-``/``_``
   (base64url), 32-byte hex keys, and AWS access key ids with a zero-width space inside — each in a
   sentence with no keyword before it. Masked: no run of 4+ letters or digits of the key left.
3. **False masks**: every text the masker puts a ``<kind>`` in, over ordinary questions:
   benchmarks/data/ordinary_questions.txt (hand-written product and support questions in English
   and Portuguese, with numbers, versions, dates, prices, order and ticket numbers, paths and
   URLs), the example suite's queries, the sentences of ../shared/seeds (Portuguese and English
   design notes), SciFact's test queries and, with ``--corpus``, SciFact's corpus titles and first
   three sentences of each abstract, and its 5,183 abstracts whole.

Prints a Markdown table per part and one JSON line (``--json`` for the JSON alone).

4. ``--speed``: µs a text of ``Masker.mask`` over SciFact's corpus sentences and the ordinary
   questions (21,067 texts), after a warm-up; run it with ``PYTHONPATH`` on the code to compare.

Usage: PYTHONPATH=src python benchmarks/bench_masking.py [--corpus] [--many] [--speed] [--json]
(``--many``: 2,000 keys of each family under three more seeds.)
"""

from __future__ import annotations

import base64
import json
import random
import re
import sys
import time
import unicodedata
import urllib.parse
from collections import Counter
from pathlib import Path

from retrieval_gate.golden.masking import Masker

ROOT = Path(__file__).resolve().parents[1]
BATTERY = ROOT / "benchmarks" / "data" / "pii_battery.tsv"
HELDOUT = ROOT / "benchmarks" / "data" / "pii_heldout.tsv"
ORDINARY = ROOT / "benchmarks" / "data" / "ordinary_questions.txt"
SHARED = ROOT.parent / "shared"
ITEM_RE = re.compile("⟦(.*?)⟧")
ESCAPE_RE = re.compile(r"\\u([0-9a-fA-F]{4})")
PLANTED = 200


def unescape(text: str) -> str:
    """``\\uXXXX`` → the character (the battery writes invisible characters so)."""
    return ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)


def read_battery(path: Path = BATTERY) -> list[tuple[str, str, str, str]]:
    """``(kind, region, text, item)`` per variant (the markers removed from ``text``)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        kind, region, marked = line.split("\t")
        marked = unescape(marked)
        m = ITEM_RE.search(marked)
        out.append((kind, region or "US", ITEM_RE.sub(r"\1", marked), m.group(1) if m else ""))
    return out


def item_pieces(item: str, rest: str) -> list[str]:
    """The runs of 4+ letters or digits of the item (as written, NFKC, percent-decoded) that the
    rest of the text does not hold."""
    forms = {item, unicodedata.normalize("NFKC", item)}
    forms |= {urllib.parse.unquote(urllib.parse.unquote(f)) for f in list(forms)}
    forms = {"".join(ch for ch in f if unicodedata.category(ch) != "Cf") for f in forms} | forms
    rests = {rest, unicodedata.normalize("NFKC", rest)}
    return sorted({p for f in forms for p in re.findall(r"[^\W_]{4,}", f) if not any(p in r for r in rests)})


def is_masked(kind: str, text: str, item: str, masked: str) -> bool:
    if kind == "none":
        return masked == text
    pieces = item_pieces(item, text.replace(item, ""))
    return f"<{kind}>" in masked and item not in masked and not any(p in masked for p in pieces)


def battery(path: Path = BATTERY) -> dict:
    maskers: dict[str, Masker] = {}
    table: dict[str, Counter] = {}
    default_table: dict[str, Counter] = {}
    missed = []
    default = Masker()
    for kind, region, text, item in read_battery(path):
        masker = maskers.setdefault(region, Masker(region=region))
        masked = masker.mask(text)[0]
        ok = is_masked(kind, text, item, masked)
        table.setdefault(kind, Counter())[ok] += 1
        default_table.setdefault(kind, Counter())[is_masked(kind, text, item, default.mask(text)[0])] += 1
        if not ok:
            missed.append({"kind": kind, "text": text, "masked": masked})
    return {"by_kind": {k: [c[True], c.total()] for k, c in sorted(table.items())},
            "by_kind_default_region": {k: [c[True], c.total()] for k, c in sorted(default_table.items())},
            "missed": missed}


def planted_keys(n: int = PLANTED, seed: int = 57) -> dict[str, list[str]]:
    """``n`` sentences per key family, the key in each; seeded."""
    rng = random.Random(seed)

    def raw(k: int) -> bytes:
        return bytes(rng.getrandbits(8) for _ in range(k))

    templates = ("aws secret {} not working", "my key is {}", "{} was rejected", "chave {} não funciona",
                 "export {} to the env", "storage key {} expired", "what is {}?", "got 403 with {} today")
    families = {
        "aws_secret_key": lambda: base64.b64encode(raw(30)).decode(),
        "azure_storage_key": lambda: base64.b64encode(raw(64)).decode(),
        "base64_32_bytes": lambda: base64.b64encode(raw(32)).decode(),
        "base64url_32_bytes": lambda: base64.urlsafe_b64encode(raw(32)).decode().rstrip("="),
        "hex_32_bytes": lambda: raw(32).hex(),
        "akia_zero_width": lambda: "AKIA" + "\u200b" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
                                                                   for _ in range(16)),
    }
    return {name: [(rng.choice(templates).format(key), key) for key in (make() for _ in range(n))]
            for name, make in families.items()}


def planted(n: int = PLANTED, seed: int = 57) -> dict:
    masker = Masker()
    out = {}
    for name, rows in planted_keys(n, seed).items():
        ok = 0
        for text, key in rows:
            masked = masker.mask(text)[0]
            ok += "<secret>" in masked and not any(p in masked for p in item_pieces(key, text.replace(key, "")))
        out[name] = [ok, len(rows)]
    return out


def sentences(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) >= 12]


def corpora(*, corpus: bool) -> dict[str, list[str]]:
    out = {"ordinary_questions": [q for q in ORDINARY.read_text(encoding="utf-8").splitlines() if q.strip()],
           "examples": [json.loads(line)["query"] for line in
                        (ROOT / "examples" / "cases.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]}
    seeds = sorted((SHARED / "seeds").glob("*.txt"))
    if seeds:
        out["seed_sentences"] = [s for p in seeds for s in sentences(p)]
    scifact = SHARED / "datasets" / "scifact"
    if (scifact / "queries.jsonl").is_file():
        out["scifact_queries"] = [json.loads(line)["text"] for line in
                                  (scifact / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    if corpus and (scifact / "corpus.jsonl").is_file():
        out["scifact_corpus_sentences"] = [
            t for line in (scifact / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
            for d in [json.loads(line)] for t in [d.get("title", ""), *d.get("text", "").split(". ")[:3]] if t]
        out["scifact_abstracts"] = [json.loads(line).get("text", "") for line in
                                    (scifact / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def false_masks(*, corpus: bool) -> dict:
    masker = Masker()
    out = {}
    for name, texts in corpora(corpus=corpus).items():
        hits = [(t, m) for t in texts for m, found in [masker.mask(t)] if found]
        out[name] = {"texts": len(texts), "masked": len(hits), "examples": hits[:8]}
    return out


def speed() -> dict:
    texts = [*corpora(corpus=True).get("scifact_corpus_sentences", []), *corpora(corpus=False)["ordinary_questions"]]
    masker = Masker()
    masker.mask("warm up 4111 1111 1111 1111 a@b.co AKIAIOSFODNN7EXAMPLE")
    start = time.perf_counter()
    for text in texts:
        masker.mask(text)
    seconds = time.perf_counter() - start
    return {"texts": len(texts), "seconds": round(seconds, 2), "us_per_text": round(seconds / len(texts) * 1e6)}


def main(argv: list[str]) -> dict:
    if "--speed" in argv:
        result = speed()
        print(json.dumps(result, sort_keys=True))
        return result
    result = {"battery": battery(), "heldout": battery(HELDOUT), "planted": planted(),
              "false_masks": false_masks(corpus="--corpus" in argv)}
    if "--many" in argv:  # 2,000 keys of each family under three other seeds
        result["planted_many"] = {f"seed {seed}": planted(2000, seed) for seed in (1, 2, 3)}
    if "--json" not in argv:
        b = result["battery"]
        print("| kind | variants | masked (line's region) | masked (default region US) |")
        print("|---|---:|---:|---:|")
        for kind, (ok, n) in b["by_kind"].items():
            print(f"| {kind} | {n} | {ok} | {b['by_kind_default_region'][kind][0]} |")
        ids = [v for k, v in b["by_kind"].items() if k not in ("secret", "none")]
        ok, n = sum(v[0] for v in ids), sum(v[1] for v in ids)
        print(f"| **identifiers** | {n} | {ok} ({ok / n:.1%}) | |")
        print()
        h = result["heldout"]["by_kind"]
        print("held-out: " + ", ".join(f"{k} {ok} of {n}" for k, (ok, n) in h.items()))
        print()
        print("| planted key family | masked |")
        print("|---|---:|")
        for name, (ok, n) in result["planted"].items():
            print(f"| {name} | {ok} of {n} |")
        for seed, families in result.get("planted_many", {}).items():
            print(f"{seed}: " + ", ".join(f"{name} {ok} of {n}" for name, (ok, n) in families.items()))
        print()
        print("| ordinary texts | texts | with a mask |")
        print("|---|---:|---:|")
        for name, f in result["false_masks"].items():
            print(f"| {name} | {f['texts']} | {f['masked']} ({f['masked'] / f['texts']:.1%}) |")
    print(json.dumps(result, ensure_ascii=False, sort_keys=True))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
