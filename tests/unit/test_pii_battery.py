"""The masking goal on the battery (benchmarks/data/pii_battery.tsv, hand-written: each variant's
kind, region and the item to mask between ⟦ ⟧; ``\\uXXXX`` an invisible character), by kind:
every secret masked, at least 98 % of the 150+ structured identifiers masked (each kind its own
figure), the ``none`` variants unchanged; planted random keys of six families (generated here from
their definitions, not by the masker) all masked; at most 1 % of ordinary product questions
(benchmarks/data/ordinary_questions.txt) and none of the example suite's queries given a mask;
SciFact's queries too when ../shared is there."""

from __future__ import annotations

import base64
import json
import random
import re
import unicodedata
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from retrieval_gate.golden.masking import Masker

ROOT = Path(__file__).resolve().parents[2]
BATTERY = ROOT / "benchmarks" / "data" / "pii_battery.tsv"
HELDOUT = ROOT / "benchmarks" / "data" / "pii_heldout.tsv"  # written after the detectors were tuned
ORDINARY = ROOT / "benchmarks" / "data" / "ordinary_questions.txt"
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact" / "queries.jsonl"
ITEM = re.compile("⟦(.*?)⟧")
IDENTIFIERS = ("email", "phone", "iban", "card", "ssn", "cpf", "cnpj", "ip", "date")
MASKER = Masker()


def variants() -> list[tuple[str, str, str, str]]:
    out = []
    for line in [*BATTERY.read_text(encoding="utf-8").splitlines(), *HELDOUT.read_text(encoding="utf-8").splitlines()]:
        if line.strip() and not line.startswith("#"):
            kind, region, marked = line.split("\t")
            marked = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), marked)
            item = ITEM.search(marked)
            out.append((kind, region or "US", ITEM.sub(r"\1", marked), item.group(1) if item else ""))
    return out


def percent_decoded(text: str) -> str:
    """Percent-escapes decoded (independently of the masker's decoder), twice for double encoding."""
    for _ in range(2):
        text = re.sub(r"(?:%[0-9A-Fa-f]{2})+",
                      lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace"), text)
    return text


def pieces(item: str, rest: str) -> set[str]:
    """The runs of 4+ letters or digits of the item — as written, in NFKC, without invisible
    characters, percent-decoded — that the rest of the text does not hold."""
    forms = {item, unicodedata.normalize("NFKC", item)}
    forms |= {"".join(ch for ch in f if unicodedata.category(ch) != "Cf") for f in forms}
    forms |= {percent_decoded(f) for f in forms}
    rests = {rest, unicodedata.normalize("NFKC", rest)}
    return {p for f in forms for p in re.findall(r"[^\W_]{4,}", f) if not any(p in r for r in rests)}


def masked_well(kind: str, text: str, item: str, masked: str) -> bool:
    """The item gone, no piece of it left, a ``<kind>`` in its place; ``none``: unchanged."""
    if kind == "none":
        return masked == text
    left = pieces(item, text.replace(item, ""))
    return f"<{kind}>" in masked and item not in masked and not any(p in masked for p in left)


@cache
def by_kind(default_region: bool) -> dict[str, Counter]:
    maskers: dict[str, Masker] = {}
    out: dict[str, Counter] = {}
    for kind, region, text, item in variants():
        masker = MASKER if default_region else maskers.setdefault(region, Masker(region=region))
        out.setdefault(kind, Counter())[masked_well(kind, text, item, masker.mask(text)[0])] += 1
    return out


def test_the_battery_holds_150_identifier_variants_of_every_kind():
    kinds = Counter(kind for kind, *_ in variants())
    assert sum(kinds[k] for k in IDENTIFIERS) >= 150
    assert all(kinds[k] >= 6 for k in IDENTIFIERS) and kinds["secret"] >= 50 and kinds["none"] >= 10


@pytest.mark.parametrize("default_region", [False, True], ids=["lines-region", "default-region"])
@pytest.mark.parametrize("kind", IDENTIFIERS)
def test_each_identifier_kind_is_masked_in_98_percent_of_its_variants(kind, default_region):
    counts = by_kind(default_region)[kind]
    assert counts[True] / counts.total() >= 0.98, f"{kind}: {counts[True]} of {counts.total()}"


def test_the_identifiers_together_are_masked_in_98_percent_of_the_variants():
    total = sum((by_kind(False)[k] for k in IDENTIFIERS), Counter())
    assert total.total() >= 150 and total[True] / total.total() >= 0.98


@pytest.mark.parametrize(("text", "item"), [(t, i) for k, _, t, i in variants() if k == "secret"])
def test_every_secret_of_the_battery_is_masked(text, item):
    masked = MASKER.mask(text)[0]
    assert masked_well("secret", text, item, masked), masked


@pytest.mark.parametrize("text", [t for k, _, t, _ in variants() if k == "none"])
def test_normal_queries_of_the_battery_are_left_unchanged(text):
    assert MASKER.mask(text) == (text, Counter())


def _raw(rng: random.Random, n: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(n))


KEY_FAMILIES = {  # what each key is, by its definition: random bytes in its encoding
    "aws_secret_access_key": lambda rng: base64.b64encode(_raw(rng, 30)).decode(),  # 40 chars, + and /
    "azure_storage_key": lambda rng: base64.b64encode(_raw(rng, 64)).decode(),  # 88 chars, ends ==
    "base64_32_bytes": lambda rng: base64.b64encode(_raw(rng, 32)).decode(),  # 44 chars, ends =
    "base64url_32_bytes": lambda rng: base64.urlsafe_b64encode(_raw(rng, 32)).decode().rstrip("="),
    "hex_32_bytes": lambda rng: _raw(rng, 32).hex(),
    "akia_with_zero_width_space": lambda rng: "AKIA\u200b" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
                                                                     for _ in range(16)),
}
SENTENCES = ("aws secret {} not working", "my key is {}", "{} was rejected", "chave {} não funciona",
             "export {} to the env", "got 403 with {} today")


@pytest.mark.parametrize("family", list(KEY_FAMILIES))
def test_planted_keys_without_a_keyword_are_all_masked(family):
    rng = random.Random(f"planted-{family}")
    missed = []
    for i in range(200):
        key = KEY_FAMILIES[family](rng)
        text = SENTENCES[i % len(SENTENCES)].format(key)
        masked = MASKER.mask(text)[0]
        if not masked_well("secret", text, key, masked):
            missed.append(masked)
    assert missed == []


def test_ordinary_product_questions_get_a_mask_at_most_once_in_a_hundred():
    questions = [q for q in ORDINARY.read_text(encoding="utf-8").splitlines() if q.strip()]
    assert len(questions) >= 300
    masked = [MASKER.mask(q)[0] for q in questions if MASKER.mask(q)[1]]
    assert len(masked) <= len(questions) // 100, masked


def queries_of(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [obj.get("query") or obj.get("text") for obj in map(json.loads, lines)]


def test_no_false_mask_on_the_example_suites_queries():
    queries = queries_of(ROOT / "examples" / "cases.jsonl")
    assert [q for q in queries if MASKER.mask(q)[0] != q] == []


@pytest.mark.datasets
@pytest.mark.skipif(not SCIFACT.is_file(), reason="../shared/datasets/scifact is absent")
def test_no_false_mask_on_scifact_queries():
    queries = queries_of(SCIFACT)
    assert len(queries) >= 300
    assert [q for q in queries if MASKER.mask(q)[0] != q] == []
