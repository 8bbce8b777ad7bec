"""The registry of measures (``metrics/measures.py``) is the one definition: the grid, the CLI's
help, the names ``--metrics`` accepts and docs/formats.md's table all come from it — and the
glossary's context precision, checked by hand, against its definition and by identities."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
import pytrec_eval

from retrieval_gate.errors import UsageError
from retrieval_gate.metrics import DEFAULT_MEASURES, MEASURES, METRICS_HELP, REGISTRY, metric_specs, parse_metric
from retrieval_gate.metrics.grid import compile_grid
from retrieval_gate.metrics.names import lead_metrics
from retrieval_gate.models import Case, RankedList
from retrieval_gate.score.scoring import score_case
from tests.helpers import run_cli
from tests.reference import FUNCTIONS, case_scores

ROOT = Path(__file__).resolve().parents[2]
N, R = "n", "r"  # an irrelevant and a relevant card; ranks are made unique below


TABLE_HEADER = "| name | display | formula | on by default | also accepted | trec_eval equivalent |"


def written(name: str) -> str:
    """How the docs write a measure's key: ``ndcg@k``, or ``rprec`` for one without a cutoff."""
    return f"{name}@k" if REGISTRY[name].cutoff else name


def table_row(name: str) -> str:
    """docs/formats.md's row for a measure, from its record: the formula is its function's
    docstring's first paragraph."""
    measure = REGISTRY[name]
    formula = " ".join((measure.value.__doc__ or "").split("\n\n")[0].split())
    trec = f"`{measure.trec_eval}`" if measure.trec_eval else "—"
    aliases = ", ".join(f"`{a}`" for a in measure.aliases) or "—"
    display = f"{measure.display}@k" if measure.cutoff else measure.display
    return (f"| `{written(name)}` | {display} | {formula} | {'yes' if measure.default else 'opt-in'} | "
            f"{aliases} | {trec} |")


def table_after(text: str, header: str) -> list[str]:
    """The rows of the Markdown table whose header line is ``header`` (the separator skipped)."""
    lines = text.splitlines()
    start = lines.index(header) + 2
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def test_docs_measure_table_is_the_registry() -> None:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert table_after(text, TABLE_HEADER) == [table_row(name) for name in MEASURES]


def test_readme_lists_every_measure_of_the_registry() -> None:
    """README.md's "What it measures" table names each default measure in its first column, in the
    registry's order, and the opt-in ones in its last row ("opt-in (`--metrics`): …")."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = table_after(text, "| metric | per case |")
    names = [re.findall(r"`([a-z0-9_@]+)`", row.split(" | ")[0]) for row in rows]
    assert [row.startswith("| opt-in (`--metrics`): ") for row in rows] == [False] * (len(rows) - 1) + [True]
    assert [n for found in names[:-1] for n in found] == [written(m) for m in DEFAULT_MEASURES]
    assert names[-1] == [written(m) for m in MEASURES if m not in DEFAULT_MEASURES]


def test_every_record_is_complete_and_its_names_parse() -> None:
    for name, measure in REGISTRY.items():
        assert measure.name == name and measure.value.__doc__, name
        for alias in (name, *measure.aliases):
            if measure.cutoff:
                assert parse_metric(f"{alias}@5").name == f"{name}@5"
                assert parse_metric(f"{alias.upper()}_10").name == f"{name}@10"  # trec_eval's form
            else:
                assert parse_metric(alias).name == parse_metric(alias.upper()).name == name
    aliases = [a for m in REGISTRY.values() for a in (m.name, *m.aliases)]
    assert len(aliases) == len(set(aliases)), "an alias names two measures"
    assert set(FUNCTIONS) == set(MEASURES), "every measure has its reference in tests/reference.py"


def test_opt_in_measures_are_off_by_default_and_listed_in_the_help() -> None:
    assert "context_precision" not in DEFAULT_MEASURES and "context_precision_unweighted" not in DEFAULT_MEASURES
    assert DEFAULT_MEASURES == ("hit", "recall", "ndcg", "mrr", "precision", "map")
    assert {spec.measure for spec in metric_specs((5,))} == set(DEFAULT_MEASURES)
    assert METRICS_HELP.startswith("Measures, comma-separated (default: hit,recall,ndcg,mrr,precision,map; "
                                   "also: context_precision,context_precision_unweighted")
    assert parse_metric("Context_Precision@10").name == "context_precision@10"
    assert parse_metric("context_precision_unweighted_3").name == "context_precision_unweighted@3"
    with pytest.raises(UsageError, match="known: hit, recall, ndcg, mrr, precision, map, context_precision"):
        parse_metric("context_relevance@5")


@pytest.mark.parametrize(("text", "name"), [
    ("nDCG@10", "ndcg@10"), ("ndcg_cut_10", "ndcg@10"), ("P@5", "precision@5"), ("P_5", "precision@5"),
    (" recall @ 3 ", "recall@3"), ("map_cut_100", "map@100"), ("success_1", "hit@1"),
])
def test_names_are_written_as_ir_measures_and_trec_eval_write_them(text: str, name: str) -> None:
    assert parse_metric(text).name == name


@pytest.mark.parametrize(("text", "message"), [
    ("f1@5", "unknown measure"),  # a name may hold digits: f1 is read as a measure, k 5
    ("ndcg2@5", "unknown measure"),
    ("ndcg", "nDCG takes a cutoff; write ndcg@K"),
    ("ndcg_cut", "nDCG takes a cutoff; write ndcg@K"),
    ("ndcg@0", "k must be ≥ 1"),
    ("ndcg@", "expected NAME@K"),
    ("ndcg@ten", "expected NAME@K"),
    ("ndcg@²", "expected NAME@K"),  # a digit to str.isdigit, not to int()
    ("ndcg@５", "expected NAME@K"),
    ("@5", "expected NAME@K"),
    ("nd-cg@5", "expected NAME@K"),
])
def test_a_wrong_metric_name_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_metric(text)


def test_a_suite_names_its_measures_by_name_or_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--metrics`` takes measures (``nDCG``, ``P``, ``ndcg@10`` → their measure); a misspelt one
    is a usage error (exit 2) naming the known measures, not a traceback."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "q", "query": "?", "gold": ["g1"]}) + "\n")
    run = tmp_path / "run.trec"
    run.write_text("q Q0 x 1 2 t\nq Q0 g1 2 1 t\n")
    out = tmp_path / "out.json"
    code, _out, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--k", "2", "--metrics",
                               "nDCG, P,hit@7", "--out", str(out)], capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["metrics"] == ["ndcg@2", "precision@2", "hit@2"]
    code, _out, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--k", "2", "--metrics",
                               "ndcg,f1", "--out", str(out)], capsys)
    assert code == 2
    assert "measure 'f1': unknown measure (known: hit, recall, ndcg" in err


def grid_of(ranked: list[str], gold: set[str], k: int) -> dict[str, float]:
    measures = ("recall", "precision", "map", "context_precision", "context_precision_unweighted")
    got = case_scores(ranked, sorted(gold), compile_grid(metric_specs((k,), measures=measures)))
    return {name.split("@")[0]: value for name, value in got.items()}


def test_the_glossary_worked_example() -> None:
    """/work/shared/seeds/003 (the glossary): three passages are needed, the search returns 8 of
    which 2 are needed: context recall 2 ÷ 3 = 0.67, context precision 2 ÷ 8 = 0.25. Put the two
    at ranks 1 and 4: the position-weighted form is (1/1 + 2/4) / 2 = 0.75."""
    ranked = ["g1", "x1", "x2", "g2", "x3", "x4", "x5", "x6"]
    got = grid_of(ranked, {"g1", "g2", "g3"}, 8)
    assert round(got["recall"], 2) == 0.67
    assert got["context_precision_unweighted"] == 0.25 == got["precision"]
    assert got["context_precision"] == 0.75


@pytest.mark.parametrize(("ranked", "k", "weighted", "unweighted"), [
    # relevant at 1, 3, 5: (1 + 2/3 + 3/5) / 3 = 34/45; 3 of 5
    ([R + "1", N + "1", R + "2", N + "2", R + "3"], 5, 34 / 45, 3 / 5),
    ([R + "1", N + "1", R + "2", N + "2", R + "3"], 3, (1 + 2 / 3) / 2, 2 / 3),
    ([R + "1", N + "1", R + "2", N + "2", R + "3"], 2, 1.0, 1 / 2),
    ([N + "1", R + "1"], 2, 1 / 2, 1 / 2),  # one relevant at rank 2: precision@2
    ([N + "1", R + "1"], 1, 0.0, 0.0),  # none in the top k: 0
    ([N + "1", N + "2", N + "3"], 3, 0.0, 0.0),
    ([], 5, 0.0, 0.0),  # nothing retrieved: 0, not a division by zero
    ([R + "1"], 5, 1.0, 1.0),  # fewer than k came back: precision@5 would be 0.2
    ([N + "1", N + "2", R + "1", R + "2"], 10, (1 / 3 + 2 / 4) / 2, 2 / 4),
])
def test_context_precision_by_hand(ranked: list[str], k: int, weighted: float, unweighted: float) -> None:
    gold = {R + "1", R + "2", R + "3", R + "4"}
    got = grid_of(ranked, gold, k)
    assert got["context_precision"] == pytest.approx(weighted, abs=1e-15)
    assert got["context_precision_unweighted"] == pytest.approx(unweighted, abs=1e-15)


def test_context_precision_relates_to_map_recall_and_precision() -> None:
    """AP@k = context_precision@k · recall@k (the same sum over |G| and over hits@k); the
    unweighted form is precision@k whenever at least k cards came back, and ≥ it otherwise."""
    rng = random.Random(40)
    for _ in range(2000):
        pool = [f"d{i}" for i in range(rng.randint(2, 60))]
        gold = set(rng.sample(pool, rng.randint(1, min(len(pool), 12))))
        ranked = rng.sample(pool, rng.randint(0, len(pool)))
        k = rng.choice([1, 3, 5, 10, 20])
        got = grid_of(ranked, gold, k)
        assert got["map"] == pytest.approx(got["context_precision"] * got["recall"], abs=1e-12)
        if len(ranked) >= k:
            assert got["context_precision_unweighted"] == got["precision"]
        else:
            assert got["context_precision_unweighted"] >= got["precision"]
        assert 0.0 <= got["context_precision"] <= 1.0


def test_context_precision_is_counted_on_the_de_duplicated_ranking() -> None:
    """A repeated card never counts twice (docs/formats.md: de-duplicate, then cut at k)."""
    case = Case(id="c", query="q", gold=("a", "b"))
    grid = compile_grid(metric_specs((3,), measures=("context_precision", "context_precision_unweighted")))
    scores = score_case(case=case, ranking=RankedList(ids=("x", "a", "a", "x", "b")), metrics=grid).scores
    # distinct: x, a, b → relevant at 2 and 3: (1/2 + 2/3) / 2; 2 of 3
    assert scores == {"context_precision@3": pytest.approx((1 / 2 + 2 / 3) / 2),
                      "context_precision_unweighted@3": 2 / 3}


@pytest.mark.parametrize(("ranked", "n_gold", "k", "expected"), [
    # R = 4: the top 4 hold r1 and r2 → 2/4 (r3 at rank 5 is past R)
    ([R + "1", N + "1", R + "2", N + "2", R + "3"], 4, 10, 2 / 4),
    ([N + "1", R + "1", R + "2"], 2, 10, 1 / 2),  # R = 2: the top 2 hold r1
    ([R + "2", R + "1"], 2, 10, 1.0),  # both in the top R, in any order
    ([R + "1"], 1, 5, 1.0),
    ([N + "1", R + "1"], 1, 5, 0.0),  # R = 1: precision@1
    ([], 3, 5, 0.0),  # nothing retrieved: 0
    ([R + "1"], 3, 5, 1 / 3),  # fewer than R came back: still over R, as trec_eval
    # R = 4 > the largest k, 2: the ranking is read to its end, as trec_eval reads it → 4/4
    ([R + "1", R + "2", R + "3", R + "4"], 4, 2, 1.0),
    ([N + "1", R + "1", N + "2", R + "2", R + "3"], 4, 1, 2 / 4),  # r3 at rank 5, past R, even at k = 1
])
def test_r_precision_by_hand(ranked: list[str], n_gold: int, k: int, expected: float) -> None:
    gold = sorted(f"{R}{i}" for i in range(1, n_gold + 1))
    grid = metric_specs((k,), measures=("rprec", "precision"))
    assert [spec.name for spec in grid] == ["rprec", f"precision@{k}"]
    assert case_scores(ranked, gold, grid)["rprec"] == expected


def test_r_precision_is_named_without_a_cutoff() -> None:
    assert parse_metric("Rprec") == parse_metric("rprec") == parse_metric("R_Precision")
    assert (parse_metric("Rprec").name, parse_metric("Rprec").display) == ("rprec", "Rprec")
    with pytest.raises(UsageError, match="Rprec takes no cutoff; write rprec"):
        parse_metric("Rprec@5")
    with pytest.raises(UsageError, match="Rprec takes no cutoff; write rprec"):
        parse_metric("rprec_5")


def test_score_computes_an_opt_in_measure_when_metrics_names_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``retrieval-gate score --metrics`` end to end on the glossary's example: the opt-in measures
    appear only when asked for, the default run has none of them."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "q", "query": "?", "gold": ["g1", "g2", "g3"]}) + "\n")
    run = tmp_path / "run.trec"
    docs = ["g1", "x1", "x2", "g2", "x3", "x4", "x5", "x6"]
    run.write_text("".join(f"q Q0 {d} {i} {10 - i} t\n" for i, d in enumerate(docs, 1)))
    out = tmp_path / "asked.json"
    code, _out, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--k", "8", "--metrics",
                               "recall,context_precision,context_precision_unweighted", "--out", str(out)], capsys)
    assert code == 0, err
    values = {m: c["value"] for m, c in json.loads(out.read_text())["aggregates"]["overall"].items()}
    assert values == {"recall@8": pytest.approx(2 / 3), "context_precision@8": 0.75,
                      "context_precision_unweighted@8": 0.25}
    code, _out, err = run_cli(["score", "--run", str(run), "--cases", str(cases), "--k", "8",
                               "--out", str(tmp_path / "default.json")], capsys)
    assert code == 0, err
    assert not any(m.startswith("context") for m in json.loads((tmp_path / "default.json").read_text())["metrics"])


def rprec_runs(tmp_path: Path) -> tuple[Path, dict[str, Path], dict[str, dict[str, dict[str, float]]]]:
    """Twelve cases with three gold cards each, two locales; a base run that ranks gold high and a
    PR run that ranks it lower, six cards a case (deeper than the suite's k). Returns the cases, the runs
    and, per run, its rows as pytrec_eval reads them (strictly decreasing scores)."""
    rng = random.Random(49)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"q{i}", "query": f"query {i}", "gold": [f"g{i}{c}" for c in "abc"],
                                         "locale": "en" if i % 2 else "pt"}) + "\n" for i in range(12)))
    runs, pytrec_runs = {}, {}
    for name, share in (("base", 0.8), ("pr", 0.3)):
        rows, run = [], {}
        for i in range(12):
            picks = (f"g{i}{c}" if rng.random() < share else f"x{i}{j}" for j, c in enumerate("abcdef"))
            docs = list(dict.fromkeys(picks))
            run[f"q{i}"] = {d: float(10 - r) for r, d in enumerate(docs)}
            rows += [f"q{i} Q0 {d} {r} {10 - r} t\n" for r, d in enumerate(docs, 1)]
        runs[name] = tmp_path / f"{name}.trec"
        runs[name].write_text("".join(rows))
        pytrec_runs[name] = run
    return cases, runs, pytrec_runs


def test_a_measure_without_a_cutoff_flows_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--metrics hit,Rprec`` through score, the baseline, compare (paired Δ, a floor and a
    slice's max drop on ``rprec``) and every report format; the values are trec_eval's Rprec on
    the whole runs (six cards a case, deeper than the suite's largest k, 2, and than R = 3:
    pytrec_eval), their means and their paired difference."""
    cases, runs, pytrec_runs = rprec_runs(tmp_path)
    qrels = {f"q{i}": {f"g{i}{c}": 1 for c in "abc"} for i in range(12)}
    want = {}
    for name, run in pytrec_runs.items():
        # the whole run, as trec_eval reads it (not cut at the largest k, 2)
        want[name] = {q: v["Rprec"] for q, v in pytrec_eval.RelevanceEvaluator(qrels, {"Rprec"}).evaluate(run).items()}
        out = tmp_path / f"{name}.json"
        code, stdout, err = run_cli(["score", "--run", str(runs[name]), "--cases", str(cases), "--k", "1,2",
                                     "--metrics", "hit,Rprec", "--out", str(out)], capsys)
        assert code == 0, err
        data = json.loads(out.read_text())
        assert data["metrics"] == ["hit@1", "hit@2", "rprec"]
        assert {c["id"]: c["scores"]["rprec"] for c in data["cases"]} == pytest.approx(want[name], abs=1e-12)
        assert data["aggregates"]["overall"]["rprec"]["value"] == pytest.approx(sum(want[name].values()) / 12)
    assert want["pr"] != want["base"]
    baseline = tmp_path / "baseline.json"
    code, _out, err = run_cli(["baseline", "update", "--results", str(tmp_path / "base.json"),
                               "--baseline", str(baseline)], capsys)
    assert code == 0, err
    comparison = tmp_path / "comparison.json"
    code, stdout, err = run_cli(["compare", "--results", str(tmp_path / "pr.json"), "--baseline", str(baseline),
                                 "--floor", "Rprec=0.99", "--max-drop", "rprec:locale=en=0.5",
                                 "--out", str(comparison), "--all"], capsys)
    assert code == 1, err
    rows = {(r["metric"], r["slice"]): r for r in json.loads(comparison.read_text())["rows"]}
    row = rows[("rprec", "overall")]
    assert row["delta"] == pytest.approx(sum(want["pr"][q] - want["base"][q] for q in qrels) / 12, abs=1e-5)
    assert (row["n"], row["floor"], row["status"]) == (12, 0.99, "below_floor")
    assert rows[("rprec", "locale=en")]["max_drop"] == 0.5
    assert "Rprec on overall" in stdout and "is below the floor 0.99" in stdout
    for fmt in ("markdown", "html", "terminal", "junit"):
        code, stdout, err = run_cli(["report", "--results", str(tmp_path / "pr.json"), "--comparison",
                                     str(comparison), "--format", fmt], capsys)
        assert code == 0, err
        assert "Rprec" in stdout, fmt
    for wrong, message in (("rprec@5=0.5", "Rprec takes no cutoff; write rprec"),
                           ("ndcg=0.5", "nDCG takes a cutoff; write ndcg@K")):
        code, _out, err = run_cli(["compare", "--results", str(tmp_path / "pr.json"), "--baseline", str(baseline),
                                   "--floor", wrong], capsys)
        assert code == 2 and message in err


def test_the_terminal_table_shows_the_measures_asked_for_when_none_is_a_headline_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``score --metrics Rprec`` (or any set without hit, recall, nDCG) prints that measure's column,
    as the comment does, not a table without one."""
    cases, runs, _ = rprec_runs(tmp_path)
    code, stdout, err = run_cli(["score", "--run", str(runs["pr"]), "--cases", str(cases), "--k", "2",
                                 "--metrics", "Rprec", "--out", str(tmp_path / "out.json")], capsys)
    assert code == 0, err
    overall = json.loads((tmp_path / "out.json").read_text())["aggregates"]["overall"]["rprec"]["value"]
    assert "Rprec" in stdout and f"{overall:.3f}" in stdout


def test_the_gate_judges_the_lead_of_a_suite_without_a_headline_measure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A suite that measures only R-precision (or only measures other than hit, recall, nDCG):
    ``--fail-on-regression`` judges what the report leads with, so a significant drop fails the
    gate instead of passing with nothing judged."""
    assert lead_metrics(5, ["rprec"]) == ["rprec"]
    assert lead_metrics(5, ["precision@3", "precision@5", "map@3", "map@5", "rprec"]) == ["precision@5", "map@5"]
    assert lead_metrics(5, ["hit@5", "precision@5", "rprec"]) == ["hit@5"]
    cases, runs, _ = rprec_runs(tmp_path)
    for name in ("base", "pr"):
        code, _out, err = run_cli(["score", "--run", str(runs[name]), "--cases", str(cases), "--k", "2",
                                   "--metrics", "Rprec", "--out", str(tmp_path / f"{name}.json")], capsys)
        assert code == 0, err
    baseline = tmp_path / "baseline.json"
    code, _out, err = run_cli(["baseline", "update", "--results", str(tmp_path / "base.json"),
                               "--baseline", str(baseline)], capsys)
    assert code == 0, err
    out = tmp_path / "comparison.json"
    code, stdout, err = run_cli(["compare", "--results", str(tmp_path / "pr.json"), "--baseline", str(baseline),
                                 "--fail-on-regression", "--out", str(out)], capsys)
    row = next(r for r in json.loads(out.read_text())["rows"] if r["slice"] == "overall")
    assert (row["metric"], row["gated"], row["status"]) == ("rprec", True, "regressed")
    assert code == 1 and "Rprec on overall: dropped by" in stdout
