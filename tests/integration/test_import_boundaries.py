"""Start-up: each command imports what it needs when it needs it. Each case runs the
CLI in a fresh interpreter and lists the heavy packages it imported — a structural check, not a
timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import retrieval_gate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# What start-up must not pay for: these, and what imports one of them or costs as much — datasketch
# (numpy, scipy), gitlab (requests), onnx (numpy), huggingface_hub (~400 modules, ~0.2 s).
HEAVY = ("torch", "sentence_transformers", "chromadb", "scipy", "numpy", "rich", "jinja2", "github",
         "requests", "bm25s", "onnxruntime", "transformers", "datasketch", "gitlab", "onnx", "huggingface_hub")

PROBE = """
import json, sys
from retrieval_gate.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = HEAVY_NAMES
loaded = sorted(h for h in heavy if h in sys.modules)
commands = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("retrieval_gate.cli.")
                  and m.rsplit(".", 1)[1] not in ("app", "paths"))
print("\\n" + json.dumps({"code": code, "loaded": loaded, "commands": commands}))
""".replace("HEAVY_NAMES", repr(HEAVY))


def probe(args: list[str], cwd: Path) -> dict:
    """Run the CLI with ``args`` in a fresh interpreter: its exit code, the heavy packages and
    the command modules it imported."""
    # The package under test (not whatever a relative PYTHONPATH would find from ``cwd``).
    env = {**os.environ, "PYTHONPATH": str(Path(retrieval_gate.__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1])


def imported_by(args: list[str], cwd: Path) -> tuple[int, set[str]]:
    last = probe(args, cwd)
    return int(last["code"] or 0), set(last["loaded"])


@pytest.fixture(scope="module")
def run_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("run")
    cases = folder / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "query": "q", "gold": ["A"]}) + "\n")
    run = folder / "run.trec"
    run.write_text("c1 Q0 A 1 2.0 t\nc1 Q0 B 2 1.0 t\n")
    return cases, run


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (["--help"], set()),
        (["score", "--help"], set()),
        (["eval", "--help"], set()),
        (["compare", "--help"], set()),
        (["report", "--help"], set()),
        (["action", "--help"], set()),
        (["validate", "--kb", str(EXAMPLES / "kb"), "--cases", str(EXAMPLES / "cases.jsonl")], set()),
    ],
    ids=["help", "score-help", "eval-help", "compare-help", "report-help", "action-help", "validate"],
)
def test_help_and_validate_import_no_heavy_package(args: list[str], allowed: set[str], tmp_path: Path) -> None:
    code, loaded = imported_by(args, tmp_path)
    assert code == 0
    assert loaded <= allowed, f"{args[0]} imported {sorted(loaded - allowed)}"


def test_score_imports_no_model_store_or_scipy(run_file: tuple[Path, Path], tmp_path: Path) -> None:
    cases, run = run_file
    code, loaded = imported_by(["score", "--run", str(run), "--cases", str(cases), "--k", "1,3",
                                "--out", str(tmp_path / "r.json")], tmp_path)
    assert code == 0
    # rich (the terminal table) is what score uses; numpy only for latencies, which a TREC run has not.
    assert loaded <= {"rich"}, sorted(loaded)
    assert (tmp_path / "r.json").is_file()


def test_a_bad_input_error_imports_nothing_heavy(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    code, loaded = imported_by(["validate", "--kb", str(missing), "--cases", str(missing)], tmp_path)
    assert code == 2
    assert "torch" not in loaded and "chromadb" not in loaded and "scipy" not in loaded


def test_the_cli_defaults_come_from_their_one_home_which_imports_nothing() -> None:
    """--help must not import numpy or the baseline model for two defaults: they live in a module
    without imports, which the CLI and the comparison both read."""
    import ast

    from retrieval_gate import defaults
    from retrieval_gate.baseline import update as baseline_update
    from retrieval_gate.cli import baseline as baseline_cli
    from retrieval_gate.cli import compare as compare_cli
    from retrieval_gate.stats import sign_flip

    assert baseline_cli.DEFAULT_HISTORY_LIMIT is baseline_update.DEFAULT_HISTORY_LIMIT is defaults.DEFAULT_HISTORY_LIMIT
    assert compare_cli.DEFAULT_RESAMPLES is sign_flip.DEFAULT_RESAMPLES is defaults.DEFAULT_RESAMPLES
    tree = ast.parse(Path(defaults.__file__).read_text(encoding="utf-8"))
    assert [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)] == \
        ["from __future__ import annotations"]


def test_the_lazy_console_is_a_rich_console_made_on_first_use() -> None:
    import io

    from rich.console import Console

    from retrieval_gate.cli.app import LazyConsole

    buffer = io.StringIO()
    lazy = LazyConsole(file=buffer, width=40, highlight=False)
    assert lazy._real is None
    lazy.print("hello [bold]world[/bold]")
    assert isinstance(lazy.real, Console)
    assert buffer.getvalue() == "hello world\n"
    assert lazy.width == 40


ALL_COMMANDS = ["action", "audit", "baseline", "cases", "compare", "embed", "eval", "history", "init", "label",
                "report", "score", "subset", "sweep", "validate"]


@pytest.mark.parametrize(
    ("args", "modules"),
    [
        (["validate", "--kb", str(EXAMPLES / "kb"), "--cases", str(EXAMPLES / "cases.jsonl")], ["validate"]),
        (["--debug", "validate", "--help"], ["validate"]),
        (["score", "--help"], ["score"]),
        (["baseline", "update", "--help"], ["baseline"]),
        (["--help"], ALL_COMMANDS),
        ([], ALL_COMMANDS),
        (["valdate"], ALL_COMMANDS),  # an unknown command: click suggests from the full list
    ],
    ids=["validate", "root-flag-first", "score-help", "group", "help", "no-args", "typo"],
)
def test_a_command_imports_only_its_own_module(args: list[str], modules: list[str], tmp_path: Path) -> None:
    assert probe(args, tmp_path)["commands"] == modules


def test_help_lists_every_command_in_the_documented_order(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(retrieval_gate.__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", "--help"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    listed = [line.split()[0] for line in done.stdout.split("Commands:")[1].splitlines() if line.strip()]
    # Typer lists plain commands in registration order, then groups (baseline, label).
    assert listed == ["init", "score", "validate", "eval", "embed", "compare", "action", "report", "audit", "subset",
                      "sweep", "history", "baseline", "cases", "label"]


def test_a_typo_in_the_command_gets_a_suggestion(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(retrieval_gate.__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-m", "retrieval_gate", "valdate"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "Did you mean 'validate'?" in done.stderr


def test_compare_imports_no_scipy(run_file: tuple[Path, Path], tmp_path: Path) -> None:
    # the interval, the tests and the MDE use stats.distributions: scipy.stats / scipy.optimize
    # alone took longer to import than a whole small comparison
    cases, run = run_file
    assert imported_by(["score", "--cases", str(cases), "--run", str(run), "--k", "1,2", "--out",
                        str(tmp_path / "r.json")], tmp_path)[0] == 0
    assert imported_by(["baseline", "update", "--results", str(tmp_path / "r.json"), "--baseline",
                        str(tmp_path / "b.json")], tmp_path)[0] == 0
    code, loaded = imported_by(["compare", "--results", str(tmp_path / "r.json"), "--baseline",
                                str(tmp_path / "b.json"), "--fail-on-regression", "--out", str(tmp_path / "c.json")],
                               tmp_path)
    assert code == 0 and "numpy" in loaded and "scipy" not in loaded
    assert json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["rows"]
    code, loaded = imported_by(["report", "--results", str(tmp_path / "r.json"), "--baseline",
                                str(tmp_path / "b.json"), "--format", "markdown"], tmp_path)
    assert code == 0 and "scipy" not in loaded
