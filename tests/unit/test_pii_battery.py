"""The masking goal on the battery (benchmarks/data/pii_battery.tsv, hand-written: each
variant's kind and the item to mask between ⟦ ⟧): no secret left, at least 95 % of the
structured identifiers masked, the ``none`` variants and the example suite's queries unchanged;
SciFact's queries too when ../shared is there."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from retrieval_gate.golden.masking import Masker

ROOT = Path(__file__).resolve().parents[2]
BATTERY = ROOT / "benchmarks" / "data" / "pii_battery.tsv"
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact" / "queries.jsonl"
ITEM = re.compile("⟦(.*?)⟧")


def variants() -> list[tuple[str, str, str, str]]:
    out = []
    for line in BATTERY.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            kind, region, marked = line.split("\t")
            item = ITEM.search(marked)
            out.append((kind, region or "US", ITEM.sub(r"\1", marked), item.group(1) if item else ""))
    return out


def masked_well(kind: str, text: str, item: str, masked: str) -> bool:
    """The item gone, no run of 4+ letters or digits of it left, a ``<kind>`` in its place."""
    if kind == "none":
        return masked == text
    rest = text.replace(item, "")
    pieces = [p for p in re.findall(r"[^\W_]{4,}", item) if p not in rest]
    return f"<{kind}>" in masked and item not in masked and not any(p in masked for p in pieces)


def test_the_battery_masks_every_secret_and_95_percent_of_the_identifiers():
    rows = variants()
    assert len(rows) >= 60
    maskers: dict[str, Masker] = {}
    result: dict[str, Counter] = {}
    for kind, region, text, item in rows:
        masked = maskers.setdefault(region, Masker(region=region)).mask(text)[0]
        result.setdefault(kind, Counter())[masked_well(kind, text, item, masked)] += 1
    assert result["secret"][False] == 0
    assert result["none"][False] == 0
    identifiers = sum((c for k, c in result.items() if k not in ("secret", "none")), Counter())
    assert identifiers[True] / identifiers.total() >= 0.95
    assert {"email", "phone", "iban", "card", "ssn", "cpf", "cnpj", "ip", "date"} <= set(result)
    default = Masker()  # a log drafted without --region: other regions' national numbers too
    alone = Counter(masked_well(kind, text, item, default.mask(text)[0])
                    for kind, _, text, item in rows if kind not in ("secret", "none"))
    assert alone[True] / alone.total() >= 0.95


def queries_of(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [obj.get("query") or obj.get("text") for obj in map(json.loads, lines)]


def test_no_false_mask_on_the_example_suites_queries():
    masker = Masker()
    queries = queries_of(ROOT / "examples" / "cases.jsonl")
    assert [q for q in queries if masker.mask(q)[0] != q] == []


@pytest.mark.datasets
@pytest.mark.skipif(not SCIFACT.is_file(), reason="../shared/datasets/scifact is absent")
def test_no_false_mask_on_scifact_queries():
    masker = Masker()
    queries = queries_of(SCIFACT)
    assert len(queries) >= 300
    assert [q for q in queries if masker.mask(q)[0] != q] == []
