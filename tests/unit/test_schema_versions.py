"""Files written before graded relevance still load: a results file of schema_version 1 and a
comparison file of schema_version 1 read with the values every such file had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.artifacts.run_files import read_comparison, read_results
from retrieval_gate.baseline.fingerprint import fingerprint
from tests.unit.compare_data import hits_results
from tests.unit.test_comparison import run


def test_a_version_1_results_file_reads_as_level_1_binary_relevant_mean(tmp_path: Path) -> None:
    data = hits_results([1, 0, 1]).to_json_data()
    for key in ("relevance_level", "graded", "mean", "unjudged"):
        del data[key]
    for case in data["cases"]:
        del case["grades"], case["unjudged"]
    data["schema_version"] = 1
    path = tmp_path / "old.results.json"
    path.write_text(json.dumps(data))
    results = read_results(path)
    assert (results.schema_version, results.relevance_level, results.graded, results.mean) == (1, 1, False, "relevant")
    assert fingerprint(results)["relevance"] == {"graded": False, "level": 1, "mean": "relevant"}


def test_a_version_1_comparison_file_still_loads(tmp_path: Path) -> None:
    data = run(hits_results([1, 0, 1]), hits_results([1, 1, 1])).model_dump(mode="json")
    data["schema_version"] = 1
    for row in data["rows"]:
        for key in ("p_adjusted", "ci_level", "mde", "mde_method", "n_needed"):
            del row[key]
    for change in data["lost_hits"]:
        del change["possibly_relevant"]
    path = tmp_path / "old.comparison.json"
    path.write_text(json.dumps(data))
    comparison = read_comparison(path)
    assert comparison.schema_version == 1 and all(r.mde is None for r in comparison.rows)


def test_a_version_2_comparison_file_still_loads_and_renders(tmp_path: Path) -> None:
    data = run(hits_results([1, 0, 1, 1]), hits_results([1, 1, 1, 1])).model_dump(mode="json")
    data["schema_version"] = 2
    for row in data["rows"]:
        for key in ("ci_method", "ci_agrees", "p_family", "n_changed"):
            del row[key]
        row["mde_method"] = "binomial"
        row["status"] = "underpowered" if row["status"] == "unchanged" else row["status"]
    del data["stats"]["ci_level_judged"]
    path = tmp_path / "v2.comparison.json"
    path.write_text(json.dumps(data))
    comparison = read_comparison(path)
    assert comparison.schema_version == 2 and all(r.p_family is None for r in comparison.rows)
    from retrieval_gate.render.markdown import render_comment

    text = render_comment(results=hits_results([1, 0, 1, 1]), comparison=comparison, baseline=None)
    assert "| 95% CI |" in text  # no judged level in a schema-2 file: the reported level


def test_a_changed_relevance_level_gain_or_mean_is_not_like_for_like() -> None:
    base = hits_results([1, 0, 1])
    same = run(hits_results([1, 0, 1]), base)
    assert same.like_for_like
    changed = hits_results([1, 0, 1]).model_copy(update={"relevance_level": 2, "graded": True, "mean": "trec"})
    comparison = run(changed, base)
    assert not comparison.like_for_like
    assert {(c.key, c.baseline, c.current) for c in comparison.config_changes} == {
        ("relevance.level", 1, 2), ("relevance.graded", False, True), ("relevance.mean", "relevant", "trec")}


def test_a_version_3_comparison_file_still_loads_and_renders_two_sided(tmp_path: Path) -> None:
    data = run(hits_results([1, 0, 1, 1] * 10), hits_results([1, 1, 1, 1] * 10)).model_dump(mode="json")
    data["schema_version"] = 3
    for row in data["rows"]:
        for key in ("p_one_sided", "n_lost", "n_gained"):
            del row[key]
        if row["gated"]:  # schema 3: three judged rows, two-sided, CI at 1 − alpha/3
            row["ci_level"] = 1 - 0.05 / 3
    del data["stats"]["sided"]
    data["stats"].update(ci_level_judged=1 - 0.05 / 3, judged_rows=3)
    path = tmp_path / "v3.comparison.json"
    path.write_text(json.dumps(data))
    comparison = read_comparison(path)
    assert comparison.schema_version == 3 and all(r.p_one_sided is None for r in comparison.rows)
    from retrieval_gate.render.markdown import render_comment

    text = render_comment(results=hits_results([1, 0, 1, 1] * 10), comparison=comparison, baseline=None)
    assert "| 98.3% CI |" in text and "Holm-adjusted over the 3 judged rows" in text
    # without a one-sided level, the gate's limit is the two-sided one: 6 lost cases at 0.05/3 → 7
    assert "with nothing gained, 7 lost cases are enough" in text


def test_a_comparison_file_reads_back_byte_for_byte_with_its_typed_stats_and_gate(tmp_path: Path) -> None:
    from retrieval_gate.files import dumps_json

    comparison = run(hits_results([1, 0, 1, 1] * 5), hits_results([1, 1, 1, 1] * 5))
    text = dumps_json(comparison.model_dump(mode="json"))
    path = tmp_path / "now.comparison.json"
    path.write_text(text)
    again = read_comparison(path)
    assert dumps_json(again.model_dump(mode="json")) == text
    assert sorted(json.loads(text)["stats"]) == sorted(
        ["delta", "method", "ci", "ci_level", "ci_level_judged", "p_value", "sided", "correction", "judged_rows",
         "family", "reported_rows", "mde", "power", "resamples", "seed", "alpha"])
    assert again.gate.alpha == 0.05 and again.stats.layout == 4


def test_each_schemas_stats_are_read_as_that_schemas_layout() -> None:
    from retrieval_gate.compare.model import ComparisonStats
    from retrieval_gate.render.verdict import judged_level, stats_note

    v1 = ComparisonStats.model_validate({"method": "paired bootstrap", "level": 0.95, "resamples": 10_000})
    v2 = ComparisonStats(correction="holm", judged_rows=3, ci_level=0.95)
    v3 = v2.model_copy(update={"ci_level_judged": 1 - 0.05 / 3})
    v4 = v3.model_copy(update={"sided": "one-sided", "ci_level_judged": 1 - 0.1 / 3})
    assert [s.layout for s in (v1, v2, v3, v4)] == [1, 2, 3, 4]
    assert v1.model_dump() == {"method": "paired bootstrap", "resamples": 10_000}  # a pre-release key dropped
    assert stats_note(v1).startswith("CI 95% paired bootstrap")
    assert stats_note(v2).startswith("CI: the sign-flip test inverted at 95%")
    assert "(Bonferroni)" in stats_note(v3) and "(two-sided, matching their one-sided test)" in stats_note(v4)
    assert judged_level(v3) == (pytest.approx(0.05 / 3), False)
    assert judged_level(v4) == (pytest.approx(0.05 / 3), True)
