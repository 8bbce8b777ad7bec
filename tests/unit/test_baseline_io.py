"""The baseline file (baseline.codec, artifacts.baseline): stable text,
migration, atomic write, refusals."""

from __future__ import annotations

import json
import os
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from retrieval_gate.artifacts.baseline import baseline_text, read_baseline, write_baseline
from retrieval_gate.baseline.codec import parse_baseline
from retrieval_gate.baseline.model import BASELINE_SCHEMA_VERSION, Baseline
from retrieval_gate.baseline.update import update_baseline
from retrieval_gate.errors import BaselineError, OutputError
from tests.unit.compare_data import make_case, make_results


def sample_baseline() -> Baseline:
    results = make_results([
        make_case("q1", {"hit@5": 1.0, "recall@5": 0.5, "ndcg@5": 0.6309297535714575},
                  slices=["overall", "locale=pt-BR"], query="Como resetar minha senha?"),
        make_case("q2", {"hit@5": 0.0, "recall@5": 0.0, "ndcg@5": 0.0}, slices=["overall", "locale=en-US"]),
        make_case("q3", {}, slices=["overall", "no-answer"], status="no_gold"),
    ])
    return update_baseline(baseline=None, results=results, sha="abc123", ref="main",
                           timestamp="2026-05-29T12:00:00+00:00")


def test_dumps_is_stable_sorted_small_and_round_trips():
    baseline = sample_baseline()
    text = baseline_text(baseline)
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert data["schema_version"] == BASELINE_SCHEMA_VERSION
    # scores as a list aligned with score_keys, rounded to 6 decimals, whole numbers without ".0"
    assert data["score_keys"] == ["hit@5", "ndcg@5", "recall@5"]
    assert data["cases"]["q1"]["scores"] == [1, 0.63093, 0.5]
    assert '"scores": [1, 0.63093, 0.5]' in text
    assert data["cases"]["q3"] == {"slices": ["overall", "no-answer"], "status": "no_gold"}
    assert "Como resetar" not in text  # no case text in a baseline
    case_lines = [line for line in text.splitlines() if line.startswith('    "q')]
    assert len(case_lines) == 3  # one line per case: small, line-wise git diffs
    assert text.endswith("}\n")
    again = parse_baseline(text, source="b.json")
    assert baseline_text(again) == text
    assert again.cases["q3"].status == "no_gold"


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "baselines" / "default.json"
    write_baseline(target, sample_baseline())
    assert read_baseline(target) == parse_baseline(target.read_text(encoding="utf-8"), source=str(target))
    assert sorted(p.name for p in target.parent.iterdir()) == ["default.json"]


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Writes past ``limit`` bytes fail in the kernel (EFBIG), as on a full disk: a real failure,
    no library patched."""
    ignored = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing us
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, ignored)


def test_a_failed_write_keeps_the_old_file_intact(tmp_path):
    target = tmp_path / "default.json"
    target.write_text("old content\n", encoding="utf-8")
    with pytest.raises(OutputError, match="cannot write: File too large"), file_size_limit(100):
        write_baseline(target, sample_baseline())
    assert target.read_text(encoding="utf-8") == "old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["default.json"]


def v1_document() -> dict:
    """A schema_version 1 (pre-release) baseline: no headline_k, no history."""
    data = json.loads(baseline_text(sample_baseline()))
    del data["headline_k"], data["history"]
    data["schema_version"] = 1
    data["k"] = [1, 3, 5, 10]
    return data


def test_version_1_is_migrated_with_headline_k_and_a_seeded_history():
    migrated = parse_baseline(json.dumps(v1_document()), source="old.json")
    assert migrated.schema_version == 4
    assert migrated.headline_k == 5
    assert len(migrated.history) == 1
    entry = migrated.history[0]
    assert (entry.sha, entry.ref, entry.timestamp) == ("abc123", "main", "2026-05-29T12:00:00+00:00")
    assert entry.headline == {"hit@5": 0.5, "recall@5": 0.25, "ndcg@5": 0.315465}
    assert entry.n == 2
    assert migrated.cases == sample_baseline().cases


def test_version_1_without_cutoff_5_takes_the_largest_k():
    data = v1_document()
    data["k"] = [1, 3, 10]
    assert parse_baseline(json.dumps(data), source="old.json").headline_k == 10


@pytest.mark.parametrize(("text", "message"), [
    ("", "JSON syntax error"),
    ("{\n  \"schema_version\": 2,\n  oops\n}", r"b\.json:3: not a baseline: JSON syntax error"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"hello": "world"}', "missing or invalid 'schema_version'"),
    ('{"schema_version": "2"}', "missing or invalid 'schema_version'"),
    ('{"schema_version": 0}', "missing or invalid 'schema_version'"),
    ('{"schema_version": 5, "anything": 1}', "schema_version 5 is newer than this tool reads"),
    ('{"schema_version": 2, "suite": "default"}', "not a valid baseline .*tool_version"),
    ('{"schema_version": 1, "cases": [], "inputs": {}}', "this is a results file"),
])
def test_bad_documents_are_refused_naming_the_file(text, message):
    with pytest.raises(BaselineError, match=message) as info:
        parse_baseline(text, source="b.json")
    assert str(info.value).startswith("b.json")


def test_unknown_fields_are_refused():
    data = json.loads(baseline_text(sample_baseline()))
    data["surprise"] = True
    with pytest.raises(BaselineError, match="surprise: unknown field"):
        parse_baseline(json.dumps(data), source="b.json")


@pytest.mark.parametrize("setup", ["missing", "directory", "binary"])
def test_unreadable_files_are_refused(tmp_path, setup):
    path = tmp_path / "b.json"
    if setup == "directory":
        path.mkdir()
    elif setup == "binary":
        path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BaselineError) as info:
        read_baseline(path)
    assert str(path) in str(info.value)


def test_reading_never_writes(tmp_path):
    path = tmp_path / "b.json"
    path.write_text('{"schema_version": 99}', encoding="utf-8")
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    with pytest.raises(BaselineError):
        read_baseline(Path(path))
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before


def test_version_2_is_migrated_with_the_scoring_every_earlier_file_used():
    data = json.loads(baseline_text(sample_baseline()))
    data["schema_version"] = 2
    data["fingerprint"] = {"config": {"retriever": "dense"}, "k": [5], "inputs": {}}
    migrated = parse_baseline(json.dumps(data), source="old.json")
    assert migrated.schema_version == 4
    assert migrated.fingerprint["relevance"] == {"graded": False, "level": 1, "mean": "relevant"}
    assert migrated.fingerprint["config"] == {"retriever": "dense"}


DATA = Path(__file__).parents[1] / "data"


@pytest.mark.parametrize("version", [2, 3])
def test_an_older_baseline_loads_without_rankings_and_keeps_every_score(version):
    """Baselines written by the tool before rankings were kept (scores as objects): schema 3,
    written by the previous release on examples/, and this repository's own schema 2 file."""
    path = DATA / f"baseline_schema{version}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["schema_version"] == version
    loaded = read_baseline(path)
    assert loaded.schema_version == 4 and loaded.rankings is False
    assert {cid: case.scores for cid, case in loaded.cases.items()} == \
        {cid: case.get("scores", {}) for cid, case in raw["cases"].items()}
    assert all(case.ranked == [] for case in loaded.cases.values())
    again = parse_baseline(baseline_text(loaded), source="b.json")
    assert again == loaded  # written as schema 4, read back the same


def test_rankings_round_trip_with_their_scores():
    results = make_results([make_case("q1", {"hit@5": 1.0}, slices=["overall"])])
    results.cases[0].retrieved[:] = ["a", "b", "c"]
    results.cases[0].retrieved_scores[:] = [0.912345, 0.5, 0.25]
    baseline = update_baseline(baseline=None, results=results, sha=None, ref=None, timestamp=None)
    text = baseline_text(baseline)
    again = parse_baseline(text, source="b.json")
    assert again.rankings is True
    assert again.cases["q1"].ranked == ["a", "b", "c"]
    assert again.cases["q1"].ranked_scores == [0.9123, 0.5, 0.25]  # 4 decimals: display only


@pytest.mark.parametrize("what", ["baseline", "KB manifest"])
def test_a_file_over_the_cap_reports_the_cap_even_when_the_cut_splits_a_character(tmp_path, monkeypatch, what):
    from retrieval_gate.artifacts.baseline import read_kb_manifest
    from retrieval_gate.load import boundary

    monkeypatch.setattr(boundary, "MAX_FILE_BYTES", 11)  # our own limit, small: the 12th byte is inside an "é"
    path = tmp_path / "default.json"
    target = path if what == "baseline" else tmp_path / "default.kb.json"
    target.write_text('"' + "é" * 10 + '"', encoding="utf-8")
    with pytest.raises(BaselineError, match=f"not a {what}: larger than 11 bytes"):
        read_baseline(path) if what == "baseline" else read_kb_manifest(path)
