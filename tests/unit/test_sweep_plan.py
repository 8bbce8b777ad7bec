"""The sweep's grid: axes read as typed settings, the reference point, index-time groups, shards."""

from __future__ import annotations

import pytest

from retrieval_gate.errors import InputError, UsageError
from retrieval_gate.settings import SuiteConfig
from retrieval_gate.sweep.cache import cacheable
from retrieval_gate.sweep.plan import Override, is_index_key, make_plan, parse_axis, parse_shard


def test_axis_values_are_read_as_yaml_scalars():
    assert parse_axis("chunking.size=300, 600") == ("chunking.size", [300, 600])
    assert parse_axis("retriever=dense,bm25") == ("retriever", ["dense", "bm25"])
    assert parse_axis("store.exact=true,false") == ("store.exact", [True, False])


@pytest.mark.parametrize("text", ["cases=a.jsonl,b.jsonl", "k=5,10", "store.path=a,b", "gate.alpha=0.1"])
def test_a_key_that_would_measure_points_differently_is_refused(text):
    with pytest.raises(InputError) as info:
        parse_axis(text)
    assert "cannot be swept" in str(info.value)


def test_an_unknown_key_is_refused_naming_it():
    with pytest.raises(InputError) as info:
        parse_axis("chunking.sise=300")
    assert "'chunking.sise'" in str(info.value)


def test_an_axis_without_values_is_a_usage_error():
    with pytest.raises(UsageError):
        parse_axis("chunking.size")


def test_a_value_the_schema_refuses_is_an_input_error_naming_the_key():
    with pytest.raises(InputError) as info:
        make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": [10, 300]}, where="--axis")
    assert "chunking.size" in str(info.value) and "50" in str(info.value)  # ge=50 in ChunkSettings
    assert "overlap" not in str(info.value)


def test_values_take_the_schema_s_types_and_duplicates_collapse():
    plan = make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": ["300", 300, 600]}, where="--axis")
    assert plan.axes == {"chunking.size": [300, 600]}


def test_the_suite_s_own_settings_are_added_as_the_reference_and_run_first():
    plan = make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": [300, 600]}, where="--axis")
    assert plan.reference == {"chunking.size": 1200}
    assert [p.settings for p in plan.points] == [{"chunking.size": 1200}, {"chunking.size": 300},
                                                 {"chunking.size": 600}]
    assert [p.reference for p in plan.points] == [True, False, False]


def test_a_grid_point_equal_to_the_suite_s_settings_is_the_reference_not_a_copy():
    plan = make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": [600, 1200]}, where="--axis")
    assert len(plan.points) == 2 and sum(p.reference for p in plan.points) == 1


def test_query_time_variants_share_their_index_group():
    plan = make_plan(base=SuiteConfig(), suite="s",
                     axes={"chunking.size": [300, 1200], "retriever": ["dense", "bm25"]}, where="--axis")
    groups: dict[int, set] = {}
    for p in plan.points:
        groups.setdefault(p.group, set()).add(p.settings["chunking.size"])
    assert len(groups) == 2 and all(len(sizes) == 1 for sizes in groups.values())
    assert is_index_key("chunking.overlap") and not is_index_key("retriever") and not is_index_key("store.exact")


def test_a_point_that_is_invalid_as_a_whole_is_refused():
    with pytest.raises(InputError):  # overlap ≥ size: the chunker's own rule, checked when the point is made
        make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": [100], "chunking.overlap": [100]},
                  where="--axis")


def test_an_override_changes_only_its_keys():
    base = SuiteConfig(k=(1, 5), retriever="bm25")
    out = Override(values={"chunking.overlap": 0}).apply(base)
    assert out.chunking.overlap == 0 and out.chunking.size == 1200 and out.k == (1, 5) and out.retriever == "bm25"


def test_shards_keep_index_groups_together_and_cover_every_point_once():
    plan = make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": [300, 600, 900],
                                                          "retriever": ["dense", "bm25"]}, where="--axis")
    shares = [plan.shard(i, 3) for i in (1, 2, 3)]
    keys = [p.override.key for share in shares for p in share]
    assert sorted(keys) == sorted(p.override.key for p in plan.points)
    owner = {p.group: i for i, share in enumerate(shares) for p in share}
    assert all(owner[p.group] == i for i, share in enumerate(shares) for p in share)
    assert [p.override.key for p in plan.shard(2, 3)] == [p.override.key for p in shares[1]]  # deterministic


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/2", "1"])
def test_a_bad_shard_is_a_usage_error(text):
    with pytest.raises(UsageError):
        parse_shard(text)


def test_a_size_axis_below_the_default_overlap_names_the_one_line_fix():
    """--axis chunking.size=128,256 with the default overlap (150): the message says what to add."""
    with pytest.raises(InputError, match=r"chunking.size 128 is not above the suite's chunk overlap \(150\); add an "
                                         r"overlap axis below it, e.g. --axis chunking.overlap=16"):
        make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": [128, 256]}, where="--axis")
    plan = make_plan(base=SuiteConfig(), suite="s", axes={"chunking.size": [128, 256], "chunking.overlap": [16]},
                     where="--axis")
    assert [p.settings for p in plan.points if not p.reference] == [
        {"chunking.size": 128, "chunking.overlap": 16}, {"chunking.size": 256, "chunking.overlap": 16}]


def test_only_points_whose_answers_follow_from_their_settings_are_kept():
    """A ``python:`` or ``http(s)://`` retriever may answer differently with every input unchanged;
    an ephemeral store keeps nothing (sweep/cache.py)."""
    store = {"path": "/tmp/rg-store"}
    assert cacheable(SuiteConfig(retriever="hybrid", store=store))
    assert not cacheable(SuiteConfig(retriever="python:x.py:search", store=store))
    assert not cacheable(SuiteConfig(retriever="http://127.0.0.1:9/search", store=store))
    assert not cacheable(SuiteConfig(retriever="dense", store={"mode": "ephemeral"}))
