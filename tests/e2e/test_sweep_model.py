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
    again = [int(n) for n in re.findall(r"· embedded (\d+), reused", stderr)]
    assert again == [0] * 7
