"""``retrieval-gate eval`` with the non-dense retrievers, end to end through the CLI: several
retrievers side by side, filters with the false-exclusion rate, custom retrievers that never
load a model."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval_gate.cli import main

EN, PT, GB = {"locale": "en-US"}, {"locale": "pt-BR"}, {"locale": "en-GB"}
CARDS = [
    {"id": "mars", "title": "Mars", "text": "The Curiosity rover landed on Mars in 2012.", "metadata": EN},
    {"id": "marte", "title": "Marte", "text": "O rover Curiosity pousou em Marte em 2012.", "metadata": PT},
    {"id": "vault", "title": "Credentials", "text": "Database credentials are rotated via Vault every 30 days.",
     "metadata": EN},
    {"id": "logo", "title": "Logo", "text": "The new logo was unveiled at the all-hands meeting.", "metadata": GB},
]
CASES = [
    {"id": "q1", "query": "when did the rover land on Mars", "gold": ["mars"]},
    {"id": "q2", "query": "rover Mars 2012", "gold": ["marte"], "filter": {"locale": "en-US"}},  # falsely excluded
    {"id": "q3", "query": "rotate database credentials", "gold": ["vault"], "filter": {"locale": "en-US"}},
    {"id": "q4", "query": "logo unveiled", "gold": ["logo"], "filter": {"locale": {"$in": ["en-GB", "en-US"]}}},
]
USER_RETRIEVER = textwrap.dedent('''
    def search(query, limit, filter=None):
        if "logo" in query:
            raise RuntimeError("index offline")
        return ["vault", "mars", "logo", "marte"][:limit]
''')


@pytest.fixture
def dataset(tmp_path: Path) -> dict[str, Path]:
    kb = tmp_path / "kb.jsonl"
    kb.write_text("".join(json.dumps(c) + "\n" for c in CARDS), encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    module = tmp_path / "user_retriever.py"
    module.write_text(USER_RETRIEVER, encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 mars 1 2.0 t\nq1 Q0 vault 2 1.0 t\nq3 Q0 vault 1 5.0 t\n", encoding="utf-8")
    return {"kb": kb, "cases": cases, "module": module, "run": run, "out": tmp_path / "out" / "results.json"}


def cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(args)
    return int(exited.value.code or 0)


def test_several_retrievers_write_one_results_file_each_and_a_side_by_side(dataset, capsys):
    code = cli(["eval", "--kb", str(dataset["kb"]), "--cases", str(dataset["cases"]), "--k", "1,3",
                "--retriever", f"bm25,python:{dataset['module']}:search,run:{dataset['run']}",
                "--option", "bm25_b=0.75", "--ephemeral", "--out", str(dataset["out"])])
    out = capsys.readouterr().out
    assert code == 0, out
    folder = dataset["out"].parent
    names = sorted(p.name for p in folder.iterdir())
    assert "results.bm25.json" in names and "results.side_by_side.json" in names
    python_file = next(n for n in names if n.startswith("results.python"))
    run_file = next(n for n in names if n.startswith("results.run"))

    bm25 = json.loads((folder / "results.bm25.json").read_text())
    assert bm25["config"]["retriever"] == "bm25"
    assert bm25["config"]["details"]["b"] == 0.75
    assert "model" not in bm25["config"]  # no model is part of a BM25 result
    ranked = {c["id"]: c["retrieved"] for c in bm25["cases"]}
    assert "marte" not in ranked["q2"]  # the filter applied
    scores = {c["id"]: c["scores"] for c in bm25["cases"]}
    assert scores["q2"]["recall@3"] == 0.0  # …and recall keeps the original gold: scored, not dropped
    assert bm25["completeness"]["scored"] == 4
    assert bm25["extras"]["filter_false_exclusion"] == {"rate": pytest.approx(1 / 3), "excluded": 1, "measured": 3,
                                                        "filtered_cases": 3, "excluded_ids": ["q2"]}

    custom = json.loads((folder / python_file).read_text())
    assert custom["completeness"]["failed_ids"] == ["q4"]  # the raising query failed alone
    run = json.loads((folder / run_file).read_text())
    assert sorted(run["completeness"]["failed_ids"]) == ["q2", "q4"]  # missing from the run file
    assert {c["id"]: c["retrieved"] for c in run["cases"]}["q1"] == ["mars", "vault"]

    sbs = json.loads((folder / "results.side_by_side.json").read_text())
    assert sbs["reference"] == "bm25"
    assert sbs["rows"][0]["retriever"] == "bm25"
    assert "paired Δ vs bm25" in out


def test_a_custom_retriever_never_loads_a_model(dataset):
    script = textwrap.dedent(f'''
        import sys
        from retrieval_gate.cli import main
        try:
            main(["eval", "--kb", {str(dataset["kb"])!r}, "--cases", {str(dataset["cases"])!r},
                  "--retriever", "python:{dataset["module"]}:search,bm25", "--ephemeral",
                  "--out", {str(dataset["out"])!r}])
        except SystemExit as exc:
            code = exc.code
        loaded = [m for m in ("torch", "sentence_transformers", "chromadb") if m in sys.modules]
        print("EXIT", code, "LOADED", ",".join(loaded) or "-")
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.stdout.strip().splitlines()[-1] == "EXIT 0 LOADED -", done.stdout + done.stderr


def test_an_invalid_filter_is_a_located_input_error(dataset, capsys):
    cases = dataset["cases"]
    bad = {"id": "bad", "query": "x", "filter": {"year": {"$like": 1}}}
    cases.write_text(cases.read_text() + json.dumps(bad) + "\n")
    code = cli(["eval", "--kb", str(dataset["kb"]), "--cases", str(cases), "--retriever", "bm25", "--ephemeral",
                "--out", str(dataset["out"])])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{cases}:5: case 'bad': filter.year.$like: unknown operator" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--retriever", "bm25", "--option", "bm25_kk=1"], "unknown retriever option(s) bm25_kk"),
        (["--retriever", "bm25,hybrid", "--reference", "dense"], "--reference 'dense' is not one of"),
        (["--retriever", "sparse"], "retriever 'sparse' is unknown"),
        (["--retriever", "bm25", "--option", "novalue"], "expected KEY=VALUE"),
    ],
)
def test_bad_retriever_flags_exit_2(dataset, capsys, args, message):
    code = cli(["eval", "--kb", str(dataset["kb"]), "--cases", str(dataset["cases"]), "--ephemeral",
                "--out", str(dataset["out"]), *args])
    assert code == 2
    assert message in capsys.readouterr().err
