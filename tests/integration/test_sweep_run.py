"""``sweep.run.run_points`` with a fake of our ``Embedder`` interface and a real (ephemeral) Chroma:
what the model is asked to embed across points, and query-time store settings taking effect."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
from retrieval_gate.load.kb import load_kb
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.sweep.cache import FOLDER, _canonical
from retrieval_gate.sweep.plan import make_plan
from retrieval_gate.sweep.render import verdict_lines
from retrieval_gate.sweep.run import run_points
from retrieval_gate.sweep.stats import finalize
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


def test_an_unchanged_rerun_reads_every_point_back_verified_and_runs_nothing(tmp_path):
    """A persistent store keeps each point's run under its full fingerprint: the rerun embeds
    nothing, opens no store, and gives the same runs; a kept file that was altered is not
    believed (its point runs again, to the same numbers); an edited KB is a new fingerprint."""
    base = suite(tmp_path).model_copy(update={"store": SuiteConfig(store={"path": str(tmp_path / "store")}).store})
    plan = make_plan(base=base, suite="s", axes={"chunking.size": [200, 300], "retriever": ["dense", "bm25"]},
                     where="--axis")

    def bare(runs):
        return [{k: v for k, v in r.items() if k not in ("seconds", "run")} for r in runs]

    cold_lines: list[str] = []
    cold = run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=HashEmbedder(),
                      line=cold_lines.append)
    kept = sorted((tmp_path / "store" / FOLDER).glob("*.json"))
    assert len(kept) == len(plan.points) == len(cold)
    model = HashEmbedder()
    lines: list[str] = []
    again = run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=model, line=lines.append)
    assert bare(again) == bare(cold)
    assert model.documents == [] and model.queries == []  # nothing embedded, not even the queries
    assert all("read back (unchanged since its run" in line for line in lines) and len(lines) == len(plan.points)
    assert all(r["run"] == {"embedded": 0, "reused": len(r["texts"]), "cached": True} for r in again)

    # an altered file: its sha256 no longer matches — run again, same numbers
    data = json.loads(kept[0].read_text())
    case = next(iter(data["run"]["cases"].values()))
    case["scores"] = {name: 0.123 for name in case["scores"]}  # not what any point scored
    kept[0].write_text(json.dumps(data))
    lines.clear()
    third = run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=HashEmbedder(),
                       line=lines.append)
    assert bare(third) == bare(cold)
    assert sum("cannot be trusted (its content does not match its sha256); running it again" in x for x in lines) == 1
    # ... and one whose digest was forged to match but whose score is no score: refused too
    data = json.loads(kept[1].read_text())
    next(iter(data["run"]["cases"].values()))["scores"] = {"ndcg@5": 7.0}
    data["sha256"] = hashlib.sha256(_canonical(data["run"]).encode()).hexdigest()
    kept[1].write_text(json.dumps(data))
    lines.clear()
    assert bare(run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=HashEmbedder(),
                           line=lines.append)) == bare(cold)
    assert any("a per-case score is not a number in [0, 1]" in x for x in lines)

    # the KB changed: every fingerprint changes, every point runs
    first = next(Path(base.kb).glob("*.md"))
    first.write_text(first.read_text() + "\nOne more line.\n")
    lines.clear()
    run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=HashEmbedder(), line=lines.append)
    assert not any("read back" in x for x in lines)


def test_chunk_sizes_over_a_beir_folder_are_said_to_change_nothing(tmp_path):
    """A BEIR corpus's records are not split: every chunk size gives the same index. The run says
    so before the second build, and the summary warns and calls no knee."""
    folder = tmp_path / "beir"
    folder.mkdir()
    docs = {f"d{i}": f"{topic} " * 40 for i, topic in enumerate(["wing", "flow", "heat", "shock", "plate", "jet"])}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                                 for d, t in docs.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": t.split()[0]}) + "\n"
                                                  for i, t in enumerate(docs.values())))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                      + "".join(f"q{i}\td{i}\t1\n" for i in range(len(docs))))
    base = SuiteConfig(kb=str(folder), cases=str(folder), store={"mode": "ephemeral"})
    plan = make_plan(base=base, suite="s", axes={"chunking.size": [200, 400]}, where="--axis")
    lines: list[str] = []
    runs = run_points(plan=plan, points=plan.points, base=base, metric="ndcg@5", embedder=HashEmbedder(),
                      line=lines.append)
    assert len({r["chunks"] for r in runs}) == 1
    assert sum("the same chunks and index settings as" in x for x in lines) == len(plan.points) - 1
    sweep = finalize(suite="s", axes=plan.axes, reference=plan.reference, runs=runs, metric="ndcg@5", seed=0,
                     alpha=0.05)
    assert sweep["knee"] == {"chunking.size": None} and sweep["warnings"][0]["same_index"]
    assert any(x.startswith("Warning: chunking.size changes nothing here") for x in verdict_lines(sweep))
