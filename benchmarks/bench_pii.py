"""The masking battery of ``cases draft`` (docs/golden-set.md, "Secrets and personal data").

1. ``battery``: every variant of benchmarks/data/pii_battery.tsv (one a line: the kind expected,
   the region the log would be drafted with, the text with the item between ⟦ and ⟧) through
   ``golden.masking.Masker``; a variant counts as masked when no piece of the item (no run of 4+
   letters or digits of it) is left and a ``<kind>`` of the expected kind stands in the text;
   ``none`` variants must come out unchanged; the identifiers again with the default region (US)
   for every line, as a log drafted without ``--region`` is. Then the false masks on the example suite's
   queries (examples/cases.jsonl) and SciFact's (../shared/datasets/scifact/queries.jsonl): any
   query the masker changes is one; and on SciFact's corpus (every title and the first three
   sentences of each abstract: chemical names, gene lists, EC numbers). Prints the table kind ×
   masked (Markdown) and one JSON line.
2. ``speed``: lines/s of ``golden.log_clean.clean_log`` (normalise, drop, mask, deduplicate) on a
   synthetic 100,000-line log: SciFact-like and support-like queries, one line in ten holding an
   e-mail, phone, card, key or IP; and the same cleaning with ``keep_pii`` (no masking), so the
   masker's own cost per line is the difference.

Usage: python benchmarks/bench_pii.py battery|speed
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

from retrieval_gate.golden.log_clean import RawQuery, clean_log
from retrieval_gate.golden.masking import Masker

ROOT = Path(__file__).resolve().parents[1]
BATTERY = ROOT / "benchmarks" / "data" / "pii_battery.tsv"
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact" / "queries.jsonl"
ITEM_RE = re.compile("⟦(.*?)⟧")


def read_battery(path: Path = BATTERY) -> list[tuple[str, str, str, str]]:
    """``(kind, region, text, item)`` per variant (the markers removed from ``text``)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        kind, region, marked = line.split("\t")
        marked = re.sub(r"\\u([0-9a-fA-F]{4})", lambda e: chr(int(e.group(1), 16)), marked)  # invisible characters
        m = ITEM_RE.search(marked)
        out.append((kind, region or "US", ITEM_RE.sub(r"\1", marked), m.group(1) if m else ""))
    return out


def is_masked(kind: str, text: str, item: str, masked: str) -> bool:
    if kind == "none":
        return masked == text
    pieces = [p for p in re.findall(r"[^\W_]{4,}", item) if p not in text.replace(item, "")]
    return f"<{kind}>" in masked and item not in masked and not any(p in masked for p in pieces)


def battery() -> dict:
    maskers: dict[str, Masker] = {}
    table: dict[str, Counter] = {}
    missed = []
    for kind, region, text, item in read_battery():
        masker = maskers.setdefault(region, Masker(region=region))
        masked, _ = masker.mask(text)
        ok = is_masked(kind, text, item, masked)
        table.setdefault(kind, Counter())["masked" if ok else "missed"] += 1
        if not ok:
            missed.append({"kind": kind, "text": text, "masked": masked})
    default = Masker()
    us_only = Counter(is_masked(kind, text, item, default.mask(text)[0])
                      for kind, _, text, item in read_battery() if kind not in ("secret", "none"))
    false_masks = {}
    for name, path in (("examples", ROOT / "examples" / "cases.jsonl"), ("scifact", SCIFACT)):
        if not path.is_file():
            false_masks[name] = None
            continue
        queries = [json.loads(line).get("query") or json.loads(line).get("text") for line in
                   path.read_text(encoding="utf-8").splitlines() if line.strip()]
        changed = [(q, default.mask(q)[0]) for q in queries if default.mask(q)[0] != q]
        false_masks[name] = {"queries": len(queries), "false_masks": len(changed), "examples": changed[:5]}
    corpus = SCIFACT.parent / "corpus.jsonl"
    if corpus.is_file():  # harder than queries: every title and the first three sentences of each abstract
        texts = [t for line in corpus.read_text(encoding="utf-8").splitlines() for d in [json.loads(line)]
                 for t in [d.get("title", ""), *d.get("text", "").split(". ")[:3]] if t]
        changed = [(t, default.mask(t)[0]) for t in texts if default.mask(t)[0] != t]
        false_masks["scifact_corpus_sentences"] = {"queries": len(texts), "false_masks": len(changed),
                                                   "examples": changed[:5]}
    secrets = table.get("secret", Counter())
    ids = sum((c for k, c in table.items() if k not in ("secret", "none")), Counter())
    print("| kind | variants | masked |")
    print("|---|---:|---:|")
    for kind in sorted(table, key=lambda k: (k == "none", k)):
        c = table[kind]
        label = "none (nothing to mask: left unchanged)" if kind == "none" else kind
        print(f"| {label} | {c.total()} | {c['masked']} |")
    print(f"| **structured identifiers** | {ids.total()} | {ids['masked']} ({ids['masked'] / ids.total():.1%}) |")
    return {"variants": sum(c.total() for c in table.values()), "secrets_missed": secrets["missed"],
            "identifiers_masked_share": round(ids["masked"] / ids.total(), 4), "missed": missed,
            "identifiers_masked_share_default_region_only": round(us_only[True] / us_only.total(), 4),
            "false_masks": false_masks}


def synthetic_log(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ("refund", "password", "reset", "invoice", "shipping", "account", "delete", "export", "login", "error",
             "plan", "upgrade", "billing", "api", "token", "expired", "cancel", "order", "tracking", "vaccine",
             "protein", "expression", "cells", "risk", "mortality", "treatment", "gene", "patients")
    extras = ("mail me at jane{0}@example.com", "call +44 20 7946 {0:04d}", "card 4111 1111 1111 1111",
              "key AKIAIOSFODNN7EXAMPL{1}", "from 10.0.{2}.7", "order {0}", "error 404", "version 3.11")
    out = []
    for i in range(n):
        q = " ".join(rng.choice(words) for _ in range(rng.randint(2, 8)))
        if i % 10 == 0:
            q += " " + rng.choice(extras).format(i % 10000, chr(65 + i % 26), i % 250)
        out.append(q)
    return out


def speed(n: int = 100_000) -> dict:
    lines = synthetic_log(n)
    Masker().mask("warm up the detectors 4111 1111 1111 1111 a@b.co")
    start = time.perf_counter()
    _, report = clean_log(RawQuery(line=i + 1, text=t) for i, t in enumerate(lines))
    seconds = time.perf_counter() - start
    start = time.perf_counter()  # the same cleaning without masking (--keep-pii): what masking adds
    clean_log((RawQuery(line=i + 1, text=t) for i, t in enumerate(lines)), keep_pii=True)
    unmasked = time.perf_counter() - start
    return {"lines": n, "seconds": round(seconds, 2), "lines_per_s": round(n / seconds),
            "keep_pii_seconds": round(unmasked, 2), "masking_us_per_line": round((seconds - unmasked) / n * 1e6, 1),
            "masked": dict(sorted(report.masked.items()))}


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "battery"
    print(json.dumps(battery() if what == "battery" else speed(), ensure_ascii=False, sort_keys=True))
