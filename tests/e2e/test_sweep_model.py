"""``retrieval-gate sweep`` with the real bundled model and a real persistent Chroma store on a tiny
KB: one embedding per distinct chunk text across the chunkings, and a rerun embeds nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
from retrieval_gate.load.kb import load_kb
from tests.helpers import run_cli
from tests.integration.test_sweep_cli import QUERIES, TOPICS
from tests.reference import without_timings

pytestmark = pytest.mark.model


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in TOPICS.items():
        body = "\n\n".join(f"## Part {i}\n\n{text} Section {i} of {name}." for i in range(3))
        (kb / f"{name}.md").write_text(f"# {name.title()}\n\n{body}\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": cid, "query": q, "gold": [gold]}) + "\n"
                                                  for cid, q, gold in QUERIES), encoding="utf-8")
    config = tmp_path / "retrieval-gate.yml"
    config.write_text(f"suites:\n  default:\n    kb: kb\n    cases: cases.jsonl\n"
                      f"    store: {{path: {tmp_path / 'store'}}}\n", encoding="utf-8")
    return config


def test_each_distinct_text_is_embedded_once_and_a_rerun_embeds_nothing(suite, capsys):
    sizes = (200, 400, 1200)
    args = ["sweep", "--config", str(suite), "--axis", f"chunking.size={','.join(map(str, sizes))}",
            "--axis", "chunking.overlap=0,100", "--out", str(suite.parent / "sweep.json")]
    code, stdout, stderr = run_cli(args, capsys)
    assert code == 0, stdout + stderr
    kb = load_kb(suite.parent / "kb")
    distinct = {c.text for size in sizes for overlap in (0, 100) for c in chunk_kb(kb, ChunkSettings(size=size,
                                                                                                     overlap=overlap))}
    distinct |= {c.text for c in chunk_kb(kb, ChunkSettings())}  # the reference (1200/150)
    embedded_now = [int(n) for n in re.findall(r"· embedded (\d+), reused", stderr)]
    sweep = json.loads((suite.parent / "sweep.json").read_text())
    assert len(embedded_now) == len(sweep["points"]) == 7  # 6 grid points + the suite's own settings
    assert sum(embedded_now) == len(distinct)  # one embedding per distinct text, all points together
    assert [p["cost"]["embedded"] for p in sweep["points"]] == embedded_now  # a cold run: the same figures
    code, stdout, stderr = run_cli(args, capsys)
    assert code == 0, stdout + stderr
    # the rerun reads each point back from the store folder (verified), embeds and runs nothing
    assert re.findall(r"· embedded (\d+), reused", stderr) == []
    assert stderr.count("read back (unchanged since its run") == 7
    assert without_timings(json.loads((suite.parent / "sweep.json").read_text())) == without_timings(sweep)
    # what a point cost the cold run is still what the table shows, labelled so
    assert "embedded (cold run)" in stdout


def test_the_bundled_tokenizer_says_what_the_model_cuts():
    from retrieval_gate.embed.tokens import load_tokens

    tokens = load_tokens("all-MiniLM-L6-v2")
    assert tokens is not None and tokens.limit == 256  # sentence_bert_config.json's max_seq_length
    report = tokens.truncation(["word " * 300, "a short text"])
    # "word" is one word piece: 300 of them + [CLS] + [SEP] = 302, 46 past the limit
    assert report is not None and report.as_extras() == {"limit": 256, "chunks": 1, "of": 2, "longest": 302,
                                                         "pieces_cut": 46}


def test_chunks_in_tokens_fit_the_size_by_the_model_s_own_count(suite):
    from retrieval_gate.embed.tokens import load_tokens

    tokens = load_tokens("all-MiniLM-L6-v2")
    long_card = suite.parent / "kb" / "long.md"
    long_card.write_text("# Long\n\n" + " ".join(f"sentence {i} about exports and invoices." for i in range(200)),
                         encoding="utf-8")
    chunks = chunk_kb(load_kb(suite.parent / "kb"), ChunkSettings(size=64, overlap=8, unit="tokens"), tokens=tokens)
    counts = [tokens.count(c.text) for c in chunks]
    assert max(counts) <= 64 and len([c for c in chunks if c.parent_id == "long"]) > 10


def test_eval_reports_the_chunks_past_the_model_s_limit(tmp_path, capsys):
    kb = tmp_path / "kb.jsonl"
    kb.write_text(json.dumps({"id": "long", "title": "Long", "text": "word " * 300}) + "\n"
                  + json.dumps({"id": "short", "title": "Short", "text": "a short card"}) + "\n", encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "q", "query": "short card", "gold": ["short"]}) + "\n", encoding="utf-8")
    code, stdout, stderr = run_cli(["eval", "--kb", str(kb), "--cases", str(cases), "--ephemeral", "--out",
                                    str(tmp_path / "r.json")], capsys)
    assert code == 0, stdout + stderr
    cut = json.loads((tmp_path / "r.json").read_text())["extras"]["truncation"]
    # "Long word word …": 301 word pieces + 2 special tokens
    assert cut == {"limit": 256, "chunks": 1, "of": 2, "longest": 303, "pieces_cut": 47}
    assert "truncation: 1 of 2 chunks exceed the model's 256 word pieces" in stdout
