"""Several retrievers side by side: paired deltas against a reference, checked by hand."""

from __future__ import annotations

import pytest
from rich.console import Console

from retrieval_gate.compare.side_by_side import side_by_side
from retrieval_gate.errors import UsageError
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.render.side_by_side import side_by_side_table
from retrieval_gate.score.assemble import assemble_results
from tests.reference import side_by_side_markdown

CASES = (Case(id="1", query="a", gold=("g1",)), Case(id="2", query="b", gold=("g2",)),
         Case(id="3", query="c", gold=("g3",)), Case(id="4", query="d", gold=("g4",), locale="pt-BR"),
         Case(id="5", query="e"))
CASE_SET = CaseSet(CASES, "cases.jsonl", "0", "jsonl")


def run(rankings: dict[str, tuple[str, ...]], failed: tuple[str, ...] = ()):
    ranked = {cid: RankedList(error="down") if cid in failed else RankedList(ids=ids) for cid, ids in rankings.items()}
    return assemble_results(case_set=CASE_SET, rankings=ranked, metrics=metric_specs((1, 2), ("hit", "ndcg")),
                            ks=(1, 2), headline_k=2)


# dense: case 1 at rank 1, case 2 at rank 2, cases 3-4 missed
DENSE = run({"1": ("g1", "x"), "2": ("x", "g2"), "3": ("x", "y"), "4": ("x", "y"), "5": ("x",)})
# hybrid: case 1 at rank 2, case 2 at rank 1, case 3 at rank 1, case 4 at rank 1
HYBRID = run({"1": ("x", "g1"), "2": ("g2", "x"), "3": ("g3", "x"), "4": ("g4",), "5": ()})
# bm25: fails case 4 (an error counts as an empty ranking)
BM25 = run({"1": ("g1",), "2": ("x",), "3": ("x",), "4": ("g4",), "5": ()}, failed=("4",))


def test_paired_deltas_against_the_reference_by_hand():
    sbs = side_by_side(results={"dense": DENSE, "hybrid": HYBRID, "bm25": BM25}, resamples=2000)
    assert sbs.reference == "dense"
    assert sbs.metrics == ["hit@2", "ndcg@2"]  # headline k = 2; recall/MRR not measured
    rows = {r.retriever: r for r in sbs.rows}
    dense_hit = rows["dense"].cells["hit@2"]
    assert (dense_hit.value, dense_hit.n, dense_hit.delta) == (0.5, 4, None)
    hybrid_hit = rows["hybrid"].cells["hit@2"]
    # hits 1,1,0,0 → 1,1,1,1: Δ = 2/4; two non-zero differences, both positive: sign test p = 2·(1/2)² = 0.5
    assert hybrid_hit.value == 1.0
    assert hybrid_hit.delta == pytest.approx(0.5)
    assert hybrid_hit.n_paired == 4
    assert hybrid_hit.p_value == pytest.approx(0.5)
    assert hybrid_hit.ci is not None and hybrid_hit.ci[0] <= 0.5 <= hybrid_hit.ci[1]
    # nDCG@2 per case (1/log2(3) = 0.630930): dense 1, .630930, 0, 0 ; hybrid .630930, 1, 1, 1
    assert rows["hybrid"].cells["ndcg@2"].delta == pytest.approx((-0.369070 + 0.369070 + 1 + 1) / 4, abs=1e-6)
    # bm25: hits 1,0,0,0(failed) vs 1,1,0,0 → Δ = −1/4; the failed case stays in
    bm25_hit = rows["bm25"].cells["hit@2"]
    assert (bm25_hit.delta, bm25_hit.n_paired) == (pytest.approx(-0.25), 4)
    assert (rows["bm25"].scored, rows["bm25"].failed) == (3, 1)


def test_a_slice_pairs_only_its_cases():
    sbs = side_by_side(results={"dense": DENSE, "hybrid": HYBRID}, slice_name="locale=pt-BR", resamples=500)
    cell = sbs.rows[1].cells["hit@2"]
    assert (cell.value, cell.n, cell.delta, cell.n_paired) == (1.0, 1, 1.0, 1)


def test_the_reference_can_be_chosen():
    sbs = side_by_side(results={"dense": DENSE, "hybrid": HYBRID}, reference="hybrid", resamples=500)
    assert sbs.rows[0].cells["hit@2"].delta == pytest.approx(-0.5)
    assert sbs.rows[1].cells["hit@2"].delta is None


def test_unknown_reference_and_different_case_sets_are_usage_errors():
    with pytest.raises(UsageError, match="reference"):
        side_by_side(results={"dense": DENSE}, reference="bm25")
    other = assemble_results(case_set=CaseSet(CASES[:2], "c", "0", "jsonl"), rankings={},
                             metrics=metric_specs((2,), ("hit",)), ks=(2,))
    with pytest.raises(UsageError, match="same cases"):
        side_by_side(results={"dense": DENSE, "other": other})


def test_rendered_table_and_markdown_show_values_and_signed_deltas():
    sbs = side_by_side(results={"dense": DENSE, "hybrid": HYBRID}, resamples=500)
    console = Console(width=80, record=True, color_system=None)
    console.print(side_by_side_table(sbs))
    text = console.export_text()
    assert "paired Δ vs dense" in text
    assert "+0.500" in text and "ref" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    markdown = side_by_side_markdown(sbs)
    assert markdown.splitlines()[0].startswith("| retriever | n | hit@2 | nDCG@2 |")
    assert "| `hybrid` | 4 | 1.000 |" in markdown


def test_long_retriever_names_are_shown_whole_at_80_columns():
    long_a, long_b = "python:rg_glue:search_langchain_ensemble", "python:rg_glue:search_llamaindex_prototype"
    sbs = side_by_side(results={long_a: DENSE, long_b: HYBRID}, resamples=500)
    console = Console(width=80, record=True, color_system=None)
    console.print(side_by_side_table(sbs))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text  # never cut
    # the name column folds a long name onto more lines: joined back, each name is there whole
    column = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│"))
    assert long_a in column and long_b in column
    assert "+0.500" in text  # the numbers are not wrapped
