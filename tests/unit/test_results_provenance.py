"""``Results.provenance`` is optional and additive: results written before it still load, new
ones carry digests that follow the content."""

from __future__ import annotations

import json

from retrieval_gate.artifacts.run_files import read_results
from retrieval_gate.metrics import metric_specs
from retrieval_gate.models import Case, CaseSet, RankedList
from retrieval_gate.score.assemble import assemble_results


def results_for(cases):
    case_set = CaseSet(tuple(cases), "cases.jsonl", "sha-of-file", "jsonl")
    return assemble_results(case_set=case_set, rankings={c.id: RankedList(ids=("a",)) for c in cases},
                            metrics=metric_specs((1,), ("hit",)), ks=(1,))


def test_a_results_file_without_provenance_still_loads(tmp_path):
    data = results_for([Case(id="1", query="q", gold=("a",))]).to_json_data()
    del data["provenance"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert read_results(path).provenance is None


def test_new_results_record_the_versions():
    one = results_for([Case(id="1", query="q", gold=("a",))]).provenance
    relabelled = results_for([Case(id="1", query="q", gold=("b",))]).provenance
    assert one is not None and relabelled is not None
    assert one.cases_sha256 == "sha-of-file" and one.kb_sha256 is None and one.corpus_sha256 is None
    assert one.queries_sha256 == relabelled.queries_sha256 and one.labels_sha256 != relabelled.labels_sha256
    assert one.k_unit.startswith("cards") and "metric contract 1" in one.scorer_version and one.subset is None
