"""Aggregation per slice with honest n, completeness, the results model, terminal table."""

from __future__ import annotations

import gc
import io
import json

import pytest
from rich.console import Console

from retrieval_gate.files import dumps_json
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.render.terminal import completeness_line, print_results
from retrieval_gate.score.aggregate import latency_summary
from retrieval_gate.score.assemble import assemble_results, cyclic_gc_paused, default_headline_k
from retrieval_gate.score.results import Results

KS = (1, 3)
GRID = metric_specs(KS, ("hit", "recall"))


def case_set(*cases: Case) -> CaseSet:
    return CaseSet(cases=cases, path="cases.jsonl", sha256="0" * 64, format="jsonl",
                   lines={c.id: i + 1 for i, c in enumerate(cases)})


CASES = case_set(
    Case(id="a", query="q", gold=("g1",), locale="pt-BR", form="MATCH", tags={"team": "search"}),
    Case(id="b", query="q", gold=("g1", "g2"), locale="pt-BR", form="GAP", hard_class="near-duplicate"),
    Case(id="c", query="q", gold=("g3",), kind="adversarial", locale="es-419", tags={"team": "billing"}),
    Case(id="d", query="q", gold=(), locale="es-419"),                 # no gold
    Case(id="e", query="q", gold=("g4",), locale="en"),                # missing from the run
    Case(id="f", query="q", gold=("g5",), locale="en"),                # retriever error
)
RANKINGS = {
    "a": RankedList(ids=("g1", "x")),                 # hit@1
    "b": RankedList(ids=("x", "y", "g2", "g1")),      # hit@3, recall@3 = 1/2
    "c": RankedList(ids=("x", "g3")),                 # hit@3
    "d": RankedList(ids=("x",), scores=(0.9,)),
    "f": RankedList(error="timeout"),
    "stray": RankedList(ids=("x",)),                  # not a case
    "another": RankedList(ids=()),
}


@pytest.fixture(scope="module")
def results() -> Results:
    return assemble_results(case_set=CASES, rankings=RANKINGS, metrics=GRID, ks=KS, created_at="T")


def test_slice_names_and_honest_n(results: Results) -> None:
    agg = results.aggregates
    assert next(iter(agg)) == "overall"
    assert set(agg) == {"overall", "kind=golden", "kind=adversarial", "locale=pt-BR", "locale=es-419",
                        "locale=en", "form=MATCH", "form=GAP", "hard_class=near-duplicate",
                        "tag.team=search", "tag.team=billing", "no-answer"}
    n = {name: cells["hit@1"].n for name, cells in agg.items() if cells}
    # a b c e f carry gold (e and f failed, scored as empty rankings); d has none
    assert n == {"overall": 5, "kind=golden": 4, "kind=adversarial": 1, "locale=pt-BR": 2,
                 "locale=es-419": 1, "locale=en": 2, "form=MATCH": 1, "form=GAP": 1,
                 "hard_class=near-duplicate": 1, "tag.team=search": 1, "tag.team=billing": 1}
    assert agg["no-answer"] == {}  # the no-gold case is visible as a slice, with no score keys


@pytest.mark.parametrize(
    ("slice_name", "metric", "value"),
    [
        ("overall", "hit@1", 1 / 5),
        ("overall", "hit@3", 3 / 5),
        ("overall", "recall@3", (1 + 0.5 + 1 + 0 + 0) / 5),
        ("locale=pt-BR", "hit@1", 1 / 2),
        ("locale=pt-BR", "recall@3", 0.75),
        ("kind=adversarial", "hit@3", 1.0),
        ("locale=en", "hit@3", 0.0),
        ("tag.team=search", "hit@1", 1.0),
    ],
)
def test_means_by_hand(results: Results, slice_name: str, metric: str, value: float) -> None:
    assert results.aggregates[slice_name][metric].value == pytest.approx(value, abs=1e-15)


def test_completeness_counts_every_expected_case(results: Results) -> None:
    c = results.completeness
    assert (c.expected, c.scored, c.no_gold, c.failed) == (6, 3, 1, 2)
    assert c.expected == c.scored + c.no_gold + c.failed
    assert c.failed_ids == ["e", "f"]
    assert c.unknown_run_ids == ["another", "stray"]
    by_id = {case.id: case for case in results.cases}
    assert by_id["e"].error == "missing from the run" and by_id["e"].scores == {"hit@1": 0.0, "hit@3": 0.0,
                                                                                 "recall@1": 0.0, "recall@3": 0.0}
    assert by_id["f"].error == "timeout" and by_id["f"].status == "failed" and by_id["f"].scores["hit@3"] == 0.0
    assert by_id["d"].status == "no_gold" and by_id["d"].scores == {}
    assert completeness_line(results) == ("cases: 6 expected · 3 scored · 1 no-gold · 2 failed · "
                                          "2 run ids not in the cases")


def test_failed_case_without_gold_has_no_scores() -> None:
    res = assemble_results(case_set=case_set(Case(id="n", query="q")), rankings={}, metrics=GRID, ks=KS)
    (case,) = res.cases
    assert (case.status, case.scores) == ("failed", {})
    assert res.completeness.failed == 1 and res.aggregates["overall"] == {}


def test_abstention_fills_the_no_answer_slice() -> None:
    cases = case_set(Case(id="n1", query="q"), Case(id="n2", query="q"), Case(id="g", query="q", gold=("a",)))
    rankings = {"n1": RankedList(ids=("x",), scores=(0.2,)), "n2": RankedList(ids=("x",), scores=(0.8,)),
                "g": RankedList(ids=("a",), scores=(0.9,))}
    res = assemble_results(case_set=cases, rankings=rankings, metrics=GRID, ks=KS, abstain_threshold=0.5)
    assert set(res.aggregates["no-answer"]) == {"abstention"}
    cell = res.aggregates["no-answer"]["abstention"]
    assert (cell.value, cell.n) == (0.5, 2)
    assert res.aggregates["overall"]["hit@1"].n == 1  # abstention never mixes into the gold metrics
    assert res.aggregates["overall"]["abstention"].n == 2
    buffer = io.StringIO()
    print_results(res, Console(file=buffer, width=120, color_system=None))
    assert "no-answer: abstention 0.500 (n=2)" in buffer.getvalue()


def test_results_carry_inputs_k_and_metrics(results: Results) -> None:
    assert results.schema_version == 2 and results.k == [1, 3] and results.headline_k == 3
    assert results.metrics == ["hit@1", "hit@3", "recall@1", "recall@3"]
    assert results.inputs["cases"].count == 6 and results.inputs["cases"].sha256 == "0" * 64
    case_a = next(c for c in results.cases if c.id == "a")
    assert case_a.retrieved == ["g1", "x"] and case_a.gold == ["g1"]
    assert case_a.slices == ["overall", "kind=golden", "locale=pt-BR", "form=MATCH", "tag.team=search"]


def test_results_json_round_trips_through_the_schema(results: Results) -> None:
    data = json.loads(dumps_json(results.to_json_data()))
    assert Results.model_validate(data).to_json_data() == results.to_json_data()


def test_same_inputs_give_the_same_bytes_whatever_the_order_of_cases() -> None:
    first = assemble_results(case_set=CASES, rankings=RANKINGS, metrics=GRID, ks=KS, created_at="T")
    again = assemble_results(case_set=CASES, rankings=dict(reversed(RANKINGS.items())), metrics=GRID, ks=KS,
                             created_at="T")
    assert dumps_json(first.to_json_data()) == dumps_json(again.to_json_data())
    shuffled = case_set(*reversed(CASES.cases))
    other = assemble_results(case_set=shuffled, rankings=RANKINGS, metrics=GRID, ks=KS, created_at="T")
    assert other.aggregates == first.aggregates  # exact sums: order of cases cannot move a mean


def test_means_are_exact_sums() -> None:
    """0.1 ten times sums to 1.0 exactly with math.fsum (naive summation gives 0.9999999999999999)."""
    cases = case_set(*(Case(id=f"c{i}", query="q", gold=tuple(f"g{j}" for j in range(10))) for i in range(10)))
    rankings = {f"c{i}": RankedList(ids=("g0",)) for i in range(10)}
    res = assemble_results(case_set=cases, rankings=rankings, metrics=metric_specs((1,), ("recall",)), ks=(1,))
    assert res.aggregates["overall"]["recall@1"].value == 0.1


def test_latency_summary() -> None:
    cases = case_set(*(Case(id=f"c{i}", query="q", gold=("a",)) for i in range(4)))
    rankings = {f"c{i}": RankedList(ids=("a",), latency_ms=float(v)) for i, v in enumerate((10, 20, 30, 40))}
    res = assemble_results(case_set=cases, rankings=rankings, metrics=GRID, ks=KS)
    assert res.latency is not None
    assert (res.latency.n, res.latency.p50_ms, res.latency.mean_ms) == (4, 25.0, 25.0)
    assert res.latency.p95_ms == pytest.approx(38.5)
    assert latency_summary(res.cases[:0]) is None


@pytest.mark.parametrize(("ks", "expected"), [((1, 3, 5, 10), 5), ((1, 3), 3), ((10,), 10)])
def test_default_headline_k(ks: tuple[int, ...], expected: int) -> None:
    assert default_headline_k(ks) == expected


def test_terminal_table_shows_each_slice_with_n(results: Results) -> None:
    buffer = io.StringIO()
    print_results(results, Console(file=buffer, width=120, color_system=None))
    text = buffer.getvalue()
    row = next(line for line in text.splitlines() if "locale=pt-BR" in line)
    assert [cell.strip() for cell in row.strip("│┃ ").split("│")][:4] == ["locale=pt-BR", "2", "1.000", "0.750"]
    assert "tag.team=search" in text
    assert "recall@k is a lower bound" in text
    assert "6 expected" in text


def test_the_cyclic_gc_pause_always_restores_the_previous_state() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cyclic_gc_paused():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # was off before: stays off
    finally:
        gc.enable()
