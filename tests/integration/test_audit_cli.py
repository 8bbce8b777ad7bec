"""``retrieval-gate audit`` and ``subset`` as a user runs them (subprocess, the real console
script): outputs, determinism, the PR diff section, exit 2 with file:line on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

TWIN = ("Refunds to a credit card take five to ten business days to appear on the customer's statement, "
        "depending on the bank that issued the card and on the time of day the refund was made.")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "retrieval_gate", *args], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=300)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def small(tmp_path: Path) -> tuple[Path, Path]:
    kb = write_jsonl(tmp_path / "kb.jsonl", [
        {"id": "refund", "text": TWIN, "metadata": {"doc_type": "faq"}},
        {"id": "refund-copy", "text": TWIN.replace("five to ten", "five to twelve"), "metadata": {"doc_type": "faq"}},
        {"id": "empty", "text": "   ", "metadata": {"doc_type": "guide"}},
    ])
    cases = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "q1", "query": "how long does a card refund take", "gold": ["refund"], "locale": "en-US",
         "split": "dev"},
        {"id": "q2", "query": "refund timing for cards", "gold": ["refund-copy"], "locale": "en-US",
         "split": "heldout"},
        {"id": "q3", "query": "the empty one", "gold": ["empty"], "locale": "pt-BR"},
    ])
    return kb, cases


def test_audit_writes_findings_deterministically(small, tmp_path):
    kb, cases = small
    one = run("audit", "--kb", str(kb), "--cases", str(cases), "--out", "a1.json", "--html", "a.html",
              "--threshold", "0.7", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    two = run("audit", "--kb", str(kb), "--cases", str(cases), "--out", "a2.json", "--threshold", "0.7",
              cwd=tmp_path)
    assert two.returncode == 0, two.stderr
    assert (tmp_path / "a1.json").read_bytes() == (tmp_path / "a2.json").read_bytes()
    report = json.loads((tmp_path / "a1.json").read_text(encoding="utf-8"))
    kinds = {(f["kind"], tuple(f["cases"]), tuple(f["cards"])) for f in report["findings"]
             if not f["kind"].endswith("_cell")}
    assert kinds == {
        ("near_duplicate_cards", (), ("refund", "refund-copy")),
        ("ambiguous_gold", ("q1",), ("refund", "refund-copy")),
        ("ambiguous_gold", ("q2",), ("refund", "refund-copy")),
        ("split_shared_gold", ("q1", "q2"), ("refund", "refund-copy")),
        ("empty_gold_card", ("q3",), ("empty",)),
    }
    assert report["coverage"]["fields"] == ["kind", "locale", "gold.doc_type"]
    assert report["provenance"]["k_unit"].startswith("cards")
    html = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert "Coverage matrix" in html and "http" not in html.replace("http-equiv", "")
    assert "ambiguous_gold" in one.stdout


def test_pr_section_lists_only_introduced_findings(small, tmp_path):
    kb, cases = small
    assert run("audit", "--kb", str(kb), "--cases", str(cases), "--out", "base.json", cwd=tmp_path).returncode == 0
    rows = [json.loads(x) for x in cases.read_text(encoding="utf-8").splitlines()]
    rows.append({"id": "q4", "query": "How long does a card refund take?", "gold": ["refund"], "locale": "en-US"})
    write_jsonl(cases, rows)
    proc = run("audit", "--kb", str(kb), "--cases", str(cases), "--out", "pr.json", "--base", "base.json",
               "--markdown", "section.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    section = (tmp_path / "section.md").read_text(encoding="utf-8")
    # new: q4 asks q1's question (duplicate_query) and its gold has a twin (ambiguous_gold, high);
    # the empty gold card of q3 was already in the base
    assert section.startswith("<details><summary>🧪 Golden-set audit: 2 new findings in this PR (1 high)")
    assert "| high | ambiguous_gold | q4 |" in section and "| medium | duplicate_query | q1, q4 |" in section
    assert "empty_gold_card" not in section


def test_label_review_from_a_results_file(tmp_path):
    kb = write_jsonl(tmp_path / "kb.jsonl", [{"id": i, "text": f"card {i} " * 10} for i in "ABCD"])
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"id": "q1", "query": "first", "gold": ["A"]},
                                                   {"id": "q2", "query": "second", "gold": ["B"]}])
    run_file = write_jsonl(tmp_path / "run.jsonl", [{"id": "q1", "retrieved": ["C", "D", "B"]},
                                                    {"id": "q2", "retrieved": ["B", "C"]}])
    assert run("score", "--run", str(run_file), "--cases", str(cases), "--kb", str(kb), "--k", "3",
               "--out", "results.json", cwd=tmp_path).returncode == 0
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["provenance"]["labels_sha256"] and results["provenance"]["subset"] is None
    proc = run("audit", "--kb", str(kb), "--cases", str(cases), "--results", "results.json", "--out", "a.json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    review = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))["label_review"]
    assert review["k"] == 3
    assert [(i["case"], i["hit"], i["unjudged"]) for i in review["queue"]] == [
        ("q1", False, ["C", "D", "B"]), ("q2", True, ["C"])]


@pytest.mark.parametrize(("args", "message"), [
    (["--coverage", "kind,colour"], "unknown coverage field 'colour'"),
    (["--threshold", "1.5"], "audit.threshold"),
    (["--coverage", ","], "give at least one coverage field"),
])
def test_bad_settings_exit_2(small, tmp_path, args, message):
    kb, cases = small
    proc = run("audit", "--kb", str(kb), "--cases", str(cases), "--out", "a.json", *args, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_bad_cases_line_exit_2_with_file_and_line(small, tmp_path):
    kb, cases = small
    cases.write_text(cases.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    proc = run("audit", "--kb", str(kb), "--cases", str(cases), "--out", "a.json", cwd=tmp_path)
    assert proc.returncode == 2 and f"{cases}:4: JSON syntax error" in proc.stderr


def test_subset_of_the_examples_and_its_comment_notice(tmp_path):
    out = tmp_path / "pr.jsonl"
    proc = run("subset", "--cases", str(EXAMPLES / "cases.jsonl"), "--per-cell", "3", "--by", "kind,locale",
               "--seed", "7", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    full = (EXAMPLES / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    # 4 cells (adversarial/golden × en-US/pt-BR), each with ≥ 3 cases → 12 lines, verbatim from the file
    assert len(lines) == 12 and all(line in full for line in lines)
    rows = [json.loads(x) for x in lines]
    assert sum(1 for r in rows if r.get("kind") == "adversarial") == 6
    again = tmp_path / "again.jsonl"
    run("subset", "--cases", str(EXAMPLES / "cases.jsonl"), "--per-cell", "3", "--by", "kind,locale",
        "--seed", "7", "--out", str(again), cwd=tmp_path)
    assert again.read_bytes() == out.read_bytes()
    # a run over the subset records it, and its comment says so
    ids = [r["id"] for r in rows]
    write_jsonl(tmp_path / "run.jsonl", [{"id": i, "retrieved": ["a-card"]} for i in ids])
    assert run("score", "--run", "run.jsonl", "--cases", str(out), "--out", "r.json", cwd=tmp_path).returncode == 0
    results = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert results["provenance"]["subset"]["n"] == 12 and results["provenance"]["subset"]["of"] == 62
    proc = run("report", "--results", "r.json", "--format", "markdown", "--out", "c.md", cwd=tmp_path)
    assert "**PR subset:** 12 of 62 cases" in (tmp_path / "c.md").read_text(encoding="utf-8")


def test_subset_edited_after_drawing_is_not_called_a_subset(tmp_path):
    out = tmp_path / "pr.jsonl"
    run("subset", "--cases", str(EXAMPLES / "cases.jsonl"), "--per-cell", "1", "--out", str(out), cwd=tmp_path)
    first = out.read_text(encoding="utf-8").splitlines()[0]
    out.write_text(first + "\n", encoding="utf-8")
    write_jsonl(tmp_path / "run.jsonl", [{"id": json.loads(first)["id"], "retrieved": ["a-card"]}])
    assert run("score", "--run", "run.jsonl", "--cases", str(out), "--out", "r.json", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["provenance"]["subset"] is None


@pytest.mark.parametrize(("args", "message"), [
    (["--per-cell", "0"], "--per-cell must be at least 1"),
    (["--per-cell", "2", "--by", "kind,colour"], "unknown field 'colour'"),
    (["--per-cell", "2", "--by", "gold.category"], "needs --kb"),
])
def test_subset_usage_errors_exit_2(tmp_path, args, message):
    proc = run("subset", "--cases", str(EXAMPLES / "cases.jsonl"), "--out", "x.jsonl", *args, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr


def test_results_of_another_golden_set_exit_2(small, tmp_path):
    kb, cases = small
    other = write_jsonl(tmp_path / "other.jsonl", [{"id": "x1", "query": "something else", "gold": ["refund"]}])
    write_jsonl(tmp_path / "run.jsonl", [{"id": "x1", "retrieved": ["refund"]}])
    assert run("score", "--run", "run.jsonl", "--cases", str(other), "--out", "r.json", cwd=tmp_path).returncode == 0
    proc = run("audit", "--kb", str(kb), "--cases", str(cases), "--results", "r.json", "--out", "a.json", cwd=tmp_path)
    assert proc.returncode == 2 and "r.json: no case of this results file is in the cases" in proc.stderr
    assert not (tmp_path / "a.json").exists()


def test_a_bad_base_audit_exit_2_before_writing(small, tmp_path):
    kb, cases = small
    (tmp_path / "base.json").write_text('{"schema_version": 1}', encoding="utf-8")
    proc = run("audit", "--kb", str(kb), "--cases", str(cases), "--out", "a.json", "--base", "base.json",
               cwd=tmp_path)
    assert proc.returncode == 2 and "base.json: not an audit file" in proc.stderr
    assert not (tmp_path / "a.json").exists()
