"""The sweep's statistics over hand-made runs: paired deltas (hand-worked sign tests), Holm over the
points, the stratified split, the verdict on held-out cases, the knee, the deterministic cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from retrieval_gate.sweep.plan import canonical
from retrieval_gate.sweep.render import table_rows, verdict_lines
from retrieval_gate.sweep.stats import finalize, paired, split_cases
from tests.reference import without_timings

M = "hit@5"


def make_run(settings: dict, scores: Mapping[str, float], *, reference: bool = False, texts: Sequence[str] = (),
             slices: Mapping[str, list[str]] | None = None, chunks: int = 10) -> dict:
    slices = slices or {}
    return {"key": canonical(settings), "settings": settings, "reference": reference, "group": 0, "chunks": chunks,
            "texts": sorted(texts), "seconds": 1.0, "metrics": {M: sum(scores.values()) / len(scores)},
            "cases": {cid: {"scores": {M: v}, "slices": ["overall", *slices.get(cid, ["kind=golden"])]}
                      for cid, v in scores.items()}}


def ids(n: int) -> list[str]:
    return [f"c{i:02d}" for i in range(n)]


def sweep_of(runs: list[dict], axes: dict | None = None, seed: int = 0) -> dict:
    ref = next(r for r in runs if r["reference"])
    return finalize(suite="s", axes=axes or {"chunking.size": sorted({r["settings"]["chunking.size"] for r in runs})},
                    reference=ref["settings"], runs=runs, metric=M, seed=seed, alpha=0.05)


def test_paired_delta_and_p_are_the_hand_worked_sign_test():
    a = {"1": 1.0, "2": 1.0, "3": 1.0, "4": 0.0}
    b = {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.0}
    stat = paired(a, b, ["1", "2", "3", "4"], alpha=0.05, seed=0)
    assert stat is not None
    assert stat["delta"] == 0.75 and stat["n"] == 4
    assert stat["p"] == pytest.approx(2 * 0.5 ** 3)  # 3 of 3 changed cases gained: two-sided exact sign test
    assert stat["ci"][0] <= 0.75 <= stat["ci"][1]


def test_the_split_is_stratified_by_slices_seeded_and_disjoint():
    cases = {cid: ["overall", "kind=a"] for cid in ids(20)} | {f"b{i}": ["overall", "kind=b"] for i in range(10)}
    sel, conf = split_cases(cases, seed=0)
    assert set(sel).isdisjoint(conf) and set(sel) | set(conf) == set(cases)
    assert sum(c.startswith("b") for c in sel) == 5 and sum(c.startswith("c") for c in sel) == 10
    assert split_cases(cases, seed=0) == (sel, conf)
    assert split_cases(cases, seed=1) != (sel, conf)


def test_a_point_that_wins_on_held_out_cases_is_confirmed():
    n = ids(40)
    runs = [make_run({"chunking.size": 1200}, dict.fromkeys(n, 0.0), reference=True),
            make_run({"chunking.size": 300}, dict.fromkeys(n, 1.0)),
            make_run({"chunking.size": 600}, {c: float(i % 2) for i, c in enumerate(n)})]
    sweep = sweep_of(runs)
    assert sweep["verdict"] == "confirmed" and sweep["winner"] == {"chunking.size": 300}
    assert sweep["split"]["selection"] + sweep["split"]["confirmation"] == 40
    assert {t["settings"]["chunking.size"] for t in sweep["confirmation"]["tests"]} == {600, 1200}
    assert all(t["n"] == sweep["split"]["confirmation"] for t in sweep["confirmation"]["tests"])


def test_a_best_point_that_is_not_clearly_better_gives_no_clear_winner_with_its_rivals():
    n = ids(40)
    ref = dict.fromkeys(n, 0.0)
    runs = [make_run({"chunking.size": 1200}, ref, reference=True),
            make_run({"chunking.size": 300}, ref | {"c00": 1.0, "c01": 1.0})]
    sweep = sweep_of(runs)
    assert sweep["verdict"] == "no-clear-winner" and sweep["winner"] is None
    assert sweep["closest_rivals"] and sweep["closest_rivals"][0]["reference"] is True


def test_when_the_current_settings_are_best_there_is_no_winner():
    n = ids(30)
    runs = [make_run({"chunking.size": 1200}, dict.fromkeys(n, 1.0), reference=True),
            make_run({"chunking.size": 300}, dict.fromkeys(n, 0.0))]
    sweep = sweep_of(runs)
    assert sweep["selection"]["best_is_reference"] and sweep["verdict"] == "no-clear-winner"


def test_holm_corrects_the_points_p_values_as_a_family():
    n = ids(10)
    ref = dict.fromkeys(n, 0.0)
    runs = [make_run({"chunking.size": 1200}, ref, reference=True),
            make_run({"chunking.size": 300}, ref | {"c00": 1.0, "c01": 1.0, "c02": 1.0}),  # p = 2/2^3
            make_run({"chunking.size": 600}, dict.fromkeys(n, 1.0))]  # p = 2/2^10
    points = {p["settings"]["chunking.size"]: p["vs_reference"][M] for p in sweep_of(runs)["points"]
              if not p["reference"]}
    assert points[600]["p"] == pytest.approx(2 / 1024, abs=1e-6)
    assert points[600]["p_holm"] == pytest.approx(2 * 2 / 1024, abs=1e-6)  # the smallest of 2, times 2
    assert points[300]["p_holm"] == pytest.approx(0.25, abs=1e-6)  # then times 1 (and not below the one before)


def test_embedded_counts_each_text_once_in_plan_order():
    n = ids(4)
    runs = [make_run({"chunking.size": 1200}, dict.fromkeys(n, 0.0), reference=True, texts=["a", "b"]),
            make_run({"chunking.size": 300}, dict.fromkeys(n, 0.0), texts=["b", "c"]),
            make_run({"chunking.size": 600}, dict.fromkeys(n, 0.0), texts=["a", "c", "d"])]
    assert [p["cost"]["embedded"] for p in sweep_of(runs)["points"]] == [2, 1, 1]


def test_the_knee_is_the_cheapest_value_not_measurably_worse_than_the_best():
    """Smaller chunks, more of them: 100 → 40 chunks, 200 → 20, 400 → 10. 200 is best, 100 is
    measurably worse, 400 loses one case of 30 (not measurable): the knee is 400, the cheapest
    value with no measurable loss — not 200, the smallest one."""
    n = ids(30)
    runs = [make_run({"chunking.size": 400}, dict.fromkeys(n, 1.0) | {"c00": 0.0}, reference=True, chunks=10,
                     texts=["a"]),
            make_run({"chunking.size": 100}, dict.fromkeys(n, 0.0), chunks=40, texts=["b", "c", "d"]),
            make_run({"chunking.size": 200}, dict.fromkeys(n, 1.0), chunks=20, texts=["a", "e"])]
    sweep = sweep_of(runs)
    assert sweep["knee"] == {"chunking.size": 400}
    curve = sweep["curves"]["chunking.size"]
    assert curve["best"] == 200 and [p["value"] for p in curve["points"]] == [100, 200, 400]
    assert [p["within_best"] for p in curve["points"]] == [False, True, True]
    assert curve["cost"].startswith("chunks")
    # each value is charged its own index (the points table charges what a cold run adds in plan order)
    assert [p["cost"]["embedded"] for p in curve["points"]] == [3, 2, 1]
    assert [p["cost"]["embedded"] for p in sweep["points"]] == [1, 3, 1]
    assert "the cheapest value — fewest chunks —" in "\n".join(verdict_lines(sweep))


def test_a_flat_curve_puts_the_knee_on_the_cheapest_value_not_the_smallest():
    n = ids(40)
    runs = [make_run({"chunking.size": 1200}, dict.fromkeys(n, 1.0) | {"c01": 0.0}, reference=True, chunks=1900),
            make_run({"chunking.size": 300}, dict.fromkeys(n, 1.0) | {"c02": 0.0}, chunks=9982),
            make_run({"chunking.size": 600}, dict.fromkeys(n, 1.0) | {"c03": 0.0}, chunks=4000)]
    assert sweep_of(runs)["knee"] == {"chunking.size": 1200}


def test_no_knee_where_every_value_costs_the_same():
    """A query-time axis (options.rrf_k) changes the ranking, not the index: nothing to trade."""
    n = ids(20)
    runs = [make_run({"options.rrf_k": 60}, dict.fromkeys(n, 1.0), reference=True),
            make_run({"options.rrf_k": 10}, dict.fromkeys(n, 1.0) | {"c00": 0.0})]
    sweep = sweep_of(runs, axes={"options.rrf_k": [10, 60]})
    assert sweep["knee"] == {"options.rrf_k": None}
    assert sweep["curves"]["options.rrf_k"]["knee_note"] == "no knee: every value costs the same (10 chunks)"
    assert sweep["warnings"] == []


def test_an_axis_that_changes_nothing_is_warned_about_and_gets_no_knee():
    """Chunk sizes on a BEIR folder (records are not split): three identical points."""
    n = ids(20)
    scores = {c: (0.5 if i % 3 else 1.0) for i, c in enumerate(n)}
    runs = [make_run({"chunking.size": size}, scores, reference=size == 1200, chunks=1400, texts=["a", "b"])
            for size in (1200, 300, 600)]
    sweep = sweep_of(runs)
    assert sweep["knee"] == {"chunking.size": None}
    assert [w["axis"] for w in sweep["warnings"]] == ["chunking.size"] and sweep["warnings"][0]["same_index"]
    text = "\n".join(verdict_lines(sweep))
    assert "Warning: chunking.size changes nothing here: its values (300, 600, 1200) gave the same index" in text
    assert "Knee of chunking.size: no knee: the axis changes nothing" in text


def test_a_tie_is_reported_as_a_tie_with_how_it_was_broken():
    n = ids(20)
    runs = [make_run({"chunking.size": 1200}, dict.fromkeys(n, 1.0), reference=True, chunks=10),
            make_run({"chunking.size": 300}, dict.fromkeys(n, 1.0) | {"c00": 0.0, "c01": 0.5, "c02": 0.5},
                     chunks=40)]
    runs.append(make_run({"chunking.size": 600}, dict.fromkeys(n, 1.0), chunks=20))  # the reference's scores: a tie
    sweep = sweep_of(runs)
    tie = sweep["selection"]["tie"]
    assert tie is not None and len(tie["points"]) == 2 and tie["points"][0] == {"chunking.size": 1200}
    first = verdict_lines(sweep)[0]
    assert first.startswith("Verdict: no clear winner. 2 points tie on the ")
    assert "The tie was broken by plan order" in first and "(the current settings)" in first


def test_the_table_labels_which_interval_is_corrected():
    n = ids(10)
    runs = [make_run({"chunking.size": 1200}, dict.fromkeys(n, 1.0), reference=True),
            make_run({"chunking.size": 300}, dict.fromkeys(n, 0.0))]
    header, _rows = table_rows(sweep_of(runs))
    assert "interval (95%, uncorrected)" in header and "p (Holm)" in header and "embedded (cold run)" in header


def test_slices_a_winning_point_loses_are_listed():
    n = ids(20)
    slices = {c: ["kind=b"] if i < 4 else ["kind=a"] for i, c in enumerate(n)}
    ref = {c: 1.0 if i < 4 else 0.0 for i, c in enumerate(n)}
    better = {c: 0.0 if i < 4 else 1.0 for i, c in enumerate(n)}
    runs = [make_run({"chunking.size": 1200}, ref, reference=True, slices=slices),
            make_run({"chunking.size": 300}, better, slices=slices)]
    lost = next(p for p in sweep_of(runs)["points"] if not p["reference"])["slices_lost"]
    assert lost == [{"slice": "kind=b", "delta": -1.0, "n": 4}]


def test_without_timings_drops_only_the_seconds():
    n = ids(4)
    runs = [make_run({"chunking.size": 1200}, dict.fromkeys(n, 0.0), reference=True),
            make_run({"chunking.size": 300}, dict.fromkeys(n, 1.0))]
    sweep = sweep_of(runs)
    bare = without_timings(sweep)
    assert all("seconds" not in p["cost"] for p in bare["points"]) and "seconds" in sweep["points"][0]["cost"]
    assert {k: v for k, v in bare.items() if k not in ("points", "curves")} == \
        {k: v for k, v in sweep.items() if k not in ("points", "curves")}


def test_the_pareto_front_keeps_the_points_no_other_beats_on_both_metric_and_chunks():
    from retrieval_gate.sweep.stats import pareto

    points = [{"metrics": {M: m}, "cost": {"chunks": c}} for m, c in
              [(0.80, 300), (0.80, 200), (0.70, 100), (0.75, 250), (0.90, 500)]]
    # (0.80, 300) loses to (0.80, 200); (0.75, 250) loses to (0.80, 200)
    assert pareto(points, M) == [1, 2, 4]
