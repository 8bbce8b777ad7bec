"""``retrieval-gate sweep`` through the CLI with BM25 (no model): the grid from flags or from the
suite's ``sweep:`` block, the files it writes, shards merged equal to one run, bad input → exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.files import dumps_json
from tests.helpers import run_cli
from tests.reference import without_timings

TOPICS = {
    "billing": "Invoices are sent monthly. Update the card on file from the billing page. Refunds take five days.",
    "account": "Reset your password from the login page. Two-factor codes come from the authenticator app.",
    "export": "Export reports as CSV from the reports page. Large exports arrive by email within an hour.",
    "teams": "Invite teammates from settings. Admins can change roles and remove members at any time.",
}
QUERIES = [("q1", "how do refunds work", "billing"), ("q2", "update card on file", "billing"),
           ("q3", "reset my password", "account"), ("q4", "two-factor authenticator codes", "account"),
           ("q5", "export reports as csv", "export"), ("q6", "large exports by email", "export"),
           ("q7", "invite teammates", "teams"), ("q8", "change member roles", "teams")]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in TOPICS.items():
        body = "\n\n".join(f"## Part {i}\n\n{text} " * 2 for i in range(3))
        (kb / f"{name}.md").write_text(f"# {name.title()}\n\n{body}\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": cid, "query": q, "gold": [gold], "tags": {"team": "a" if i % 2 else "b"}}) + "\n"
        for i, (cid, q, gold) in enumerate(QUERIES)), encoding="utf-8")
    config = tmp_path / "retrieval-gate.yml"
    config.write_text("suites:\n  default:\n    kb: kb\n    cases: cases.jsonl\n    retriever: bm25\n"
                      "    store: {mode: ephemeral}\n"
                      "    sweep:\n      axes:\n        chunking.size: [100, 200]\n        chunking.overlap: [0, 20]\n"
                      "      metric: hit@3\n", encoding="utf-8")
    return config


def test_a_sweep_from_the_suite_s_block_writes_sweep_json_and_markdown(suite, capsys):
    out, md, html = suite.parent / "sweep.json", suite.parent / "sweep.md", suite.parent / "sweep.html"
    code, stdout, stderr = run_cli(["sweep", "--config", str(suite), "--out", str(out), "--markdown", str(md),
                                    "--html", str(html)], capsys)
    assert code == 0, stdout + stderr
    data = json.loads(out.read_text())
    assert {"schema_version", "suite", "reference", "axes", "points", "split", "verdict", "winner", "knee"} <= set(data)
    assert data["axes"] == {"chunking.size": [100, 200], "chunking.overlap": [0, 20]}
    assert data["reference"] == {"chunking.size": 1200, "chunking.overlap": 150}
    assert len(data["points"]) == 5 and data["points"][0]["reference"] is True  # 4 grid points + the suite's own
    assert data["metric"] == "hit@3" and data["verdict"] in ("confirmed", "no-clear-winner")
    for point in data["points"]:
        assert set(point) >= {"settings", "metrics", "vs_reference", "cost"}
        assert set(point["cost"]) == {"chunks", "embedded", "seconds"}
        assert point["cost"]["embedded"] == 0  # BM25 embeds nothing
        if not point["reference"]:
            assert set(point["vs_reference"]["hit@3"]) >= {"delta", "ci", "p"}
    assert set(data["knee"]) == {"chunking.size", "chunking.overlap"}
    assert stderr.count("point ") == 5 and "embedded 0" in stderr  # one progress line per point
    assert md.read_text().startswith("## Sweep of suite `default` (hit@3)")
    assert "Verdict:" in stdout and "Knee of chunking.size" in stdout
    page = html.read_text()
    assert page.count("<svg") == 2 and "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")  # self-contained: a chart per numeric axis, nothing fetched
    knee, curve = data["knee"]["chunking.size"], data["curves"]["chunking.size"]
    assert (f"knee {knee}" if knee is not None else f"chunking.size: {curve['knee_note']}") in page
    if knee is not None:  # the cheapest value with no measurable loss against the best
        cheapest = min((p for p in curve["points"] if p["within_best"]),
                       key=lambda p: (p["cost"]["chunks"], p["value"]))
        assert knee == cheapest["value"]


def test_two_shards_merged_equal_one_run(suite, capsys):
    root = suite.parent
    args = ["sweep", "--config", str(suite), "--axis", "chunking.size=200,300,400", "--axis", "retriever=bm25"]
    assert run_cli([*args, "--out", str(root / "one.json")], capsys)[0] == 0
    for i in (1, 2):
        assert run_cli([*args, "--shard", f"{i}/2", "--out", str(root / f"part{i}.json")], capsys)[0] == 0
    parts = [json.loads((root / f"part{i}.json").read_text()) for i in (1, 2)]
    assert all(part["runs"] for part in parts)  # each shard ran some of the points
    code, stdout, stderr = run_cli(["sweep", "merge", str(root / "part2.json"), str(root / "part1.json"),
                                    "--out", str(root / "merged.json")], capsys)
    assert code == 0, stdout + stderr
    one = json.loads((root / "one.json").read_text())
    merged = json.loads((root / "merged.json").read_text())
    assert dumps_json(without_timings(merged)) == dumps_json(without_timings(one))


def test_merge_refuses_a_missing_shard(suite, capsys):
    root = suite.parent
    assert run_cli(["sweep", "--config", str(suite), "--shard", "1/2", "--out", str(root / "p1.json")], capsys)[0] == 0
    code, _out, err = run_cli(["sweep", "merge", str(root / "p1.json"), "--out", str(root / "m.json")], capsys)
    assert code == 2 and "2/2 missing" in err


def test_merge_refuses_a_file_that_is_not_a_part(suite, capsys):
    other = suite.parent / "other.json"
    other.write_text("{}", encoding="utf-8")
    code, _out, err = run_cli(["sweep", "merge", str(other), "--out", str(suite.parent / "m.json")], capsys)
    assert code == 2 and "not a sweep part" in err


def test_a_sweep_picks_its_winner_by_a_measure_without_a_cutoff(suite, capsys):
    """``--metric Rprec`` (R-precision, measured when the suite's ``metrics:`` names it): the sweep
    reads ``rprec`` like any measure; ``Rprec@3`` is a usage error."""
    suite.write_text(suite.read_text().replace("    retriever: bm25\n", "    retriever: bm25\n    k: [1, 3]\n"
                                               "    metrics: [hit, Rprec]\n"), encoding="utf-8")
    out = suite.parent / "sweep.json"
    code, stdout, stderr = run_cli(["sweep", "--config", str(suite), "--axis", "chunking.size=100,200",
                                    "--axis", "chunking.overlap=0", "--metric", "Rprec", "--out", str(out)], capsys)
    assert code == 0, stdout + stderr
    data = json.loads(out.read_text())
    assert data["metric"] == "rprec" and len(data["points"]) == 3
    assert all(0 <= point["metrics"]["rprec"] <= 1 for point in data["points"])
    code, _out, err = run_cli(["sweep", "--config", str(suite), "--metric", "Rprec@3", "--out", str(out)], capsys)
    assert code == 2 and "Rprec takes no cutoff; write rprec" in err


@pytest.mark.parametrize(("axis", "message"), [("chunking.size=10", "chunking.size"),
                                               ("cases=x.jsonl", "cannot be swept"),
                                               ("chunking.overlap=5000", "must be smaller than chunk size")])
def test_a_bad_axis_is_exit_2_before_anything_runs(suite, capsys, axis, message):
    code, _out, err = run_cli(["sweep", "--config", str(suite), "--axis", axis, "--out",
                               str(suite.parent / "s.json")], capsys)
    assert code == 2 and message in err and "point 1/" not in err
    assert not (suite.parent / "s.json").exists()


def test_a_sweep_in_tokens_counts_the_model_s_word_pieces(suite, capsys):
    from retrieval_gate.chunk.chunking import ChunkSettings, chunk_kb
    from retrieval_gate.embed.tokens import load_tokens
    from retrieval_gate.load.kb import load_kb

    out = suite.parent / "tokens.json"
    code, stdout, stderr = run_cli(["sweep", "--config", str(suite), "--axis", "chunking.unit=tokens", "--axis",
                                    "chunking.size=50", "--axis", "chunking.overlap=0", "--out", str(out)], capsys)
    assert code == 0, stdout + stderr
    point = next(p for p in json.loads(out.read_text())["points"] if not p["reference"])
    tokens = load_tokens("all-MiniLM-L6-v2")
    chunks = chunk_kb(load_kb(suite.parent / "kb"), ChunkSettings(size=50, overlap=0, unit="tokens"), tokens=tokens)
    assert point["cost"]["chunks"] == len(chunks) > len(TOPICS) * 3  # windows of ≤ 50 word pieces cut the parts
    assert max(tokens.count(c.text) for c in chunks) <= 50


def test_an_unknown_model_stops_the_sweep_before_any_point_runs(suite, capsys, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # never try the network
    code, _out, err = run_cli(["sweep", "--config", str(suite), "--axis", "retriever=dense", "--axis",
                               "model=no-such-org/no-such-model", "--out", str(suite.parent / "s.json")], capsys)
    assert code == 2 and "error: unknown model 'no-such-org/no-such-model'" in err
    assert "point 1/" not in err and not (suite.parent / "s.json").exists()


@pytest.mark.parametrize(("where", "settings"), [
    ("run", {"gate.fail_on_regression": False}),
    ("run", {"fail_on_regression": False}),
    ("run", {"baseline": "elsewhere.json"}),
    ("run", {"cases": "other.jsonl"}),
    ("run", {"store.path": "/tmp/elsewhere"}),
    ("axes", {"gate.fail_on_regression": [False]}),
    ("reference", {"baseline": "elsewhere.json"}),
])
def test_merge_refuses_a_crafted_part_whose_points_touch_keys_a_sweep_may_not(suite, capsys, where, settings):
    """Part files travel as CI artifacts: a point naming the gate, the baseline, the cases or the
    store's path is refused at merge (exit 2), and the config file is left as it was."""
    root = suite.parent
    part_path = root / "part.json"
    args = ["sweep", "--config", str(suite), "--axis", "chunking.size=200,300", "--shard", "1/1"]
    assert run_cli([*args, "--out", str(part_path)], capsys)[0] == 0
    part = json.loads(part_path.read_text())
    if where == "run":
        part["runs"][-1]["settings"].update(settings)
    else:
        part[where].update(settings)
    part_path.write_text(json.dumps(part), encoding="utf-8")
    before = suite.read_text()
    code, _out, err = run_cli(["sweep", "merge", str(part_path), "--out", str(root / "m.json"), "--apply",
                               "--config", str(suite)], capsys)
    key = next(iter(settings))
    assert code == 2 and f"{part_path}" in err and repr(key) in err, err
    assert "cannot be swept" in err or "is not a key of a suite's retrieval settings" in err
    assert suite.read_text() == before and not (root / "m.json").exists()


def test_apply_of_merged_parts_refuses_a_winner_that_names_user_code(suite):
    """``--apply`` of a winner from part files: a retriever that runs code is written only when it
    is the suite's own already (the one check of a part's winner, ``check_part_winner``)."""
    from retrieval_gate.errors import InputError
    from retrieval_gate.settings import load_config, resolve_suite
    from retrieval_gate.sweep.plan import check_part_winner

    config_file, path = load_config(suite, required=True)
    base = resolve_suite(config_file, suite="default", config_path=path)
    for evil in ("python:evil.py:search", "http://127.0.0.1:9/search", "run:run.trec", "bm25,python:evil.py:f"):
        with pytest.raises(InputError, match="from a sweep part is not written"):
            check_part_winner({"retriever": evil}, where="x", current=base)
    with pytest.raises(InputError, match="cannot be swept"):
        check_part_winner({"chunking.size": 200, "gate.fail_on_regression": False}, where="x", current=base)
    check_part_winner({"retriever": "bm25", "chunking.size": 200}, where="x", current=base)  # built-in: fine
