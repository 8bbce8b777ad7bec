"""No user code beside a token that writes the default branch, in every command that runs
retrievers, and no forge secret in ``options.http_headers``: each
reproduction through the CLI, with bm25 where a retriever must run (no model is loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.forge import FORGES

ROOT = Path(__file__).resolve().parents[2]
KB, CASES = ROOT / "examples" / "kb", ROOT / "examples" / "cases.jsonl"
WRITE_VALUE = "glpat-WRITEtoken0123456789"
# Every forge's write-token variable, as the issue names them; and its other secret variables.
WRITE_VARIABLES = ("RETRIEVAL_GATE_GITLAB_WRITE_TOKEN", "RETRIEVAL_GATE_AZURE_WRITE_TOKEN")
SECRET_VARIABLES = ("GITHUB_TOKEN", "CI_JOB_TOKEN", "CI_REGISTRY_PASSWORD", "SYSTEM_ACCESSTOKEN",
                    "RETRIEVAL_GATE_GITLAB_TOKEN", *WRITE_VARIABLES)


@pytest.fixture(autouse=True)
def _no_forge_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for forge in FORGES:
        for name in forge.secret_variables:
            monkeypatch.delenv(name, raising=False)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exited:
        code = int(exited.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("variable", WRITE_VARIABLES)
@pytest.mark.parametrize("retriever", ["python:ret.py:search", "http://127.0.0.1:9/search"])
def test_eval_refuses_a_python_or_http_retriever_while_a_write_token_is_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        variable: str, retriever: str) -> None:
    (tmp_path / "ret.py").write_text("open('PWNED', 'w')\ndef search(queries, k):\n    return [[] for _ in queries]\n",
                                     encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, WRITE_VALUE)
    code, said = run(["eval", "--kb", str(KB), "--cases", str(CASES), "--retriever", retriever,
                      "--out", str(tmp_path / "results.json")], capsys)
    assert code == 2, said
    assert f"is refused while {variable} is set" in said and "run `eval` in a job or shell without it" in said
    assert WRITE_VALUE not in said
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "results.json").exists()



@pytest.mark.parametrize("args", [["--retriever", "chroma:team", "--option", "path=store"],
                                  ["--retriever", "qdrant:team", "--option", "url=http://127.0.0.1:9"],
                                  ["--retriever", "pgvector:chunks", "--option", "dsn=postgresql://127.0.0.1:9/x"],
                                  ["--retriever", "bm25", "--model", "openai:text-embedding-3-small"]])
def test_eval_refuses_a_store_adapter_or_an_embedding_endpoint_while_a_write_token_is_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RETRIEVAL_GATE_GITLAB_WRITE_TOKEN", WRITE_VALUE)
    code, said = run(["eval", "--kb", str(KB), "--cases", str(CASES), *args, "--out", str(tmp_path / "r.json")],
                     capsys)
    assert code == 2, said
    assert "is refused while RETRIEVAL_GATE_GITLAB_WRITE_TOKEN is set" in said and WRITE_VALUE not in said
    assert not (tmp_path / "r.json").exists()

def test_eval_with_bm25_runs_beside_a_write_token_and_a_blank_variable_holds_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RETRIEVAL_GATE_GITLAB_WRITE_TOKEN", WRITE_VALUE)
    code, said = run(["eval", "--kb", str(KB), "--cases", str(CASES), "--retriever", "bm25",
                      "--out", str(tmp_path / "results.json")], capsys)
    assert code == 0, said
    monkeypatch.setenv("RETRIEVAL_GATE_GITLAB_WRITE_TOKEN", "  ")
    code, said = run(["eval", "--kb", str(KB), "--cases", str(CASES), "--retriever", "bm25,http://127.0.0.1:9/s",
                      "--out", str(tmp_path / "results.json")], capsys)
    assert "is refused while" not in said


def test_sweep_refuses_a_python_retriever_on_its_axis_while_a_write_token_is_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "rg.yml"
    config.write_text(f"suites:\n  default:\n    kb: {KB}\n    cases: {CASES}\n    retriever: bm25\n",
                      encoding="utf-8")
    monkeypatch.setenv("RETRIEVAL_GATE_AZURE_WRITE_TOKEN", WRITE_VALUE)
    code, said = run(["sweep", "--config", str(config), "--axis", "retriever=bm25,python:ret.py:search",
                      "--out", str(tmp_path / "sweep.json")], capsys)
    assert code == 2, said
    assert "retriever python:ret.py:search: a python: retriever is refused while RETRIEVAL_GATE_AZURE_WRITE_TOKEN" \
        in said and "run `sweep`" in said and WRITE_VALUE not in said


def test_cases_draft_refuses_a_python_retriever_in_its_pool_while_a_write_token_is_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "how do refunds work"}\n', encoding="utf-8")
    monkeypatch.setenv("RETRIEVAL_GATE_GITLAB_WRITE_TOKEN", WRITE_VALUE)
    code, said = run(["cases", "draft", "--queries", str(log), "--kb", str(KB), "--pool", "bm25,python:ret.py:search",
                      "--out", str(tmp_path / "draft")], capsys)
    assert code == 2, said
    assert "is refused while RETRIEVAL_GATE_GITLAB_WRITE_TOKEN is set" in said and "run `cases draft`" in said
    assert not (tmp_path / "draft").exists()


@pytest.mark.parametrize("variable", SECRET_VARIABLES)
def test_a_header_naming_a_forge_secret_is_refused_with_its_file_and_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str) -> None:
    config = tmp_path / "rg.yml"
    config.write_text("suites:\n  default:\n    retriever: http://127.0.0.1:9/search\n    options:\n"
                      f"      http_headers:\n        X-Team: rag\n        Authorization: Bearer ${{{variable}}}\n",
                      encoding="utf-8")
    monkeypatch.setenv(variable, "s3cr3t-forge-value")
    code, said = run(["eval", "--config", str(config), "--kb", str(KB), "--cases", str(CASES),
                      "--out", str(tmp_path / "results.json")], capsys)
    assert code == 2, said
    assert (f"{config}:7: options.http_headers.Authorization: ${{{variable}}} is a runner variable or a forge's "
            "secret") in said
    assert "s3cr3t-forge-value" not in said


def test_every_secret_variable_of_the_forge_registry_is_refused_in_a_header(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    names = {name for forge in FORGES for name in forge.secret_variables}
    assert set(SECRET_VARIABLES) <= names  # the registry declares what the issue lists
    for name in sorted(names):
        config = tmp_path / "rg.yml"
        config.write_text("suites:\n  default:\n    retriever: http://127.0.0.1:9/search\n    options:\n"
                          f"      http_headers:\n        Authorization: ${{{name}}}\n", encoding="utf-8")
        monkeypatch.setenv(name, "v")
        code, said = run(["eval", "--config", str(config), "--kb", str(KB), "--cases", str(CASES),
                          "--out", str(tmp_path / "results.json")], capsys)
        assert code == 2 and f"{config}:6:" in said and "forge's secret" in said, (name, said)


def test_init_refuses_to_run_the_first_baseline_with_a_python_retriever_while_a_write_token_is_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "refunds.md").write_text("# Refunds\n\nFive to ten days.\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "query": "refund?", "gold": ["refunds"]}\n', encoding="utf-8")
    (tmp_path / "ret.py").write_text("open('PWNED', 'w')\ndef search(queries, k):\n    return [[] for _ in queries]\n",
                                     encoding="utf-8")
    (tmp_path / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    kb: kb\n    cases: cases.jsonl\n    retriever: python:ret.py:search\n",
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RETRIEVAL_GATE_GITLAB_WRITE_TOKEN", WRITE_VALUE)
    code, said = run(["init", "--dir", str(tmp_path)], capsys)
    assert code == 2, said
    assert "is refused while RETRIEVAL_GATE_GITLAB_WRITE_TOKEN is set" in said and "run `init`" in said
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "baselines").exists()


def test_every_entry_point_that_resolves_headers_hands_in_the_forges_secret_variables() -> None:
    """``${NAME}`` is resolved where ``resolve_suite`` gets ``env=``: each such call also gets the
    registry's secret variables (settings.py sits below forge/ and cannot import them)."""
    import ast

    import retrieval_gate

    package = Path(retrieval_gate.__file__).parent
    calls = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == \
                    "resolve_suite" and any(k.arg == "env" for k in node.keywords):
                calls.append((path.relative_to(package).as_posix(), {k.arg for k in node.keywords}))
    assert len(calls) >= 3, calls  # eval, sweep, the action
    assert all({"denied_variables", "denied_prefixes"} <= keywords for _, keywords in calls), calls
