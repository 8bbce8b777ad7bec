"""``sweep.run.run_points`` with a fake of our ``Embedder`` interface and a real (ephemeral) Chroma:
what the model is asked to embed across points, and query-time store settings taking effect."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
from retrieval_gate.load.kb import load_kb
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.sweep.plan import make_plan
from retrieval_gate.sweep.run import run_points
from tests.fake_embedder import HashEmbedder
from tests.integration.test_sweep_cli import QUERIES, TOPICS


def suite(tmp_path: Path) -> SuiteConfig:
    import json

    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in TOPICS.items():
        body = "\n\n".join(f"## Part {i}\n\n{text} Part {i} of {name}, said twice. {text}" for i in range(3))
        (kb / f"{name}.md").write_text(f"# {name.title()}\n\n{body}\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": c, "query": q, "gold": [g]}) + "\n"
                                                  for c, q, g in QUERIES), encoding="utf-8")
    return SuiteConfig(kb=str(kb), cases=str(tmp_path / "cases.jsonl"), store={"mode": "ephemeral"})


def test_the_model_embeds_each_distinct_text_once_across_chunkings(tmp_path):
    base = suite(tmp_path)
    plan = make_plan(base=base, suite="s", axes={"chunking.size": [100, 200], "chunking.overlap": [0, 50]},
                     where="--axis")
    model = HashEmbedder()
    runs = run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=model)
    kb = load_kb(Path(base.kb))
    distinct = {c.text for size in (100, 200) for overlap in (0, 50)
                for c in chunk_kb(kb, ChunkSettings(size=size, overlap=overlap))} | {c.text for c in chunk_kb(
                    kb, ChunkSettings())}
    assert sorted(model.documents) == sorted(distinct)  # each once, whichever points produce it
    assert sum(r["run"]["embedded"] for r in runs) == len(distinct)
    assert len(model.queries) == len(QUERIES)  # the queries once, for the whole sweep


def test_query_time_store_settings_take_effect_on_one_build(tmp_path):
    base = suite(tmp_path)
    plan = make_plan(base=base, suite="s", axes={"store.exact": [True, False]}, where="--axis")
    assert len({p.group for p in plan.points}) == 1  # one build
    runs = run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=HashEmbedder())
    assert {r["settings"]["store.exact"]: r["search"] for r in runs if r["settings"]["store.exact"] is not None} == \
        {True: "exact", False: "hnsw"}
