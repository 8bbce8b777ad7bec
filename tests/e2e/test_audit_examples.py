"""The example suite's audit, end to end through the console script and the repository's
``retrieval-gate.yml``, against the committed golden file ``examples/audit.json`` — whose
coverage counts are checked here independently, from the raw files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from itertools import product
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "examples" / "audit.json"


def front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])


def test_examples_audit_matches_the_golden_file(tmp_path):
    out = tmp_path / "audit.json"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-m", "retrieval_gate", "audit", "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == GOLDEN.read_bytes(), (
        "the example audit changed: if intended, regenerate with `retrieval-gate audit --out examples/audit.json` "
        "and explain the change in docs/audit.md")


def test_golden_coverage_counts_from_the_raw_files():
    category = {}
    for path in (REPO / "examples" / "kb").rglob("*.md"):
        meta = front_matter(path)
        category[meta["id"]] = meta.get("category", "(none)")
    cases = [json.loads(line) for line in (REPO / "examples" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    expected = Counter(
        (c.get("kind", "golden"), c.get("locale") or "(none)", category[c["gold"][0]] if c.get("gold") else "(no gold)")
        for c in cases)
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    cells = {tuple(cell["values"][f] for f in ("kind", "locale", "gold.category")): cell["n"]
             for cell in golden["coverage"]["cells"]}
    assert cells == dict(expected)
    observed = [sorted({key[i] for key in expected}) for i in range(3)]
    empty = {combo for combo in product(*observed) if combo not in expected}
    fields = ("kind", "locale", "gold.category")
    assert {tuple(e[f] for f in fields) for e in golden["coverage"]["empty_cells"]} == empty
    assert golden["counts"]["cases"] == len(cases) and golden["counts"]["cards"] == len(category)
    assert sum(1 for c in cases if not c.get("gold")) == golden["counts"]["cases"] - golden["counts"]["cases_with_gold"]


# Read by hand (word diffs of each pair, see docs/audit.md): each is one work indexed twice in CISI.
CISI_TWINS = {("1084", "1447"), ("1162", "1164"), ("1401", "4"), ("1440", "234"), ("458", "538"), ("5", "945")}


@pytest.mark.datasets
def test_cisi_duplicates_and_the_gold_they_make_ambiguous(datasets_dir, tmp_path):
    cisi = datasets_dir / "cisi"
    out = tmp_path / "cisi.json"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-m", "retrieval_gate", "audit", "--kb", str(cisi), "--cases", str(cisi),
                           "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(out.read_text(encoding="utf-8"))["findings"]
    assert {tuple(f["cards"]) for f in findings if f["kind"] == "near_duplicate_cards"} == CISI_TWINS
    # every ambiguous case: some gold card has its twin outside the gold (checked from qrels.tsv)
    gold: dict[str, set[str]] = {}
    for line in (cisi / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, rel = line.split("\t")
        if int(float(rel)) >= 1:
            gold.setdefault(qid, set()).add(doc)
    twin_of = {a: b for a, b in CISI_TWINS} | {b: a for a, b in CISI_TWINS}
    expected = sorted(q for q, docs in gold.items() if any(twin_of.get(d) and twin_of[d] not in docs for d in docs))
    assert sorted(f["cases"][0] for f in findings if f["kind"] == "ambiguous_gold") == expected
