"""``retrieval-gate report``: formats, files, exit codes (0 ok, 2 bad input or usage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.files import write_json_atomic
from retrieval_gate.render.markdown import comment_marker
from tests.golden import scenarios as sc
from tests.golden.readers import parse_html
from tests.helpers import run_cli


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    scenario = sc.regression()
    paths = {"results": tmp_path / "results.json", "baseline": tmp_path / "baseline.json",
             "comparison": tmp_path / "comparison.json"}
    write_json_atomic(paths["results"], data=scenario.results.to_json_data())
    write_json_atomic(paths["baseline"], data=scenario.baseline.model_dump(mode="json"))
    write_json_atomic(paths["comparison"], data=scenario.comparison.model_dump(mode="json"))
    return paths


def test_markdown_to_stdout_first_run(files, capsys) -> None:
    code, out, err = run_cli(["report", "--results", str(files["results"])], capsys)
    assert code == 0, err
    assert out.startswith(comment_marker("docs") + "\n")
    assert "First run" in out


def test_markdown_with_a_comparison_file_uses_it(files, capsys) -> None:
    code, out, _ = run_cli(["report", "--results", str(files["results"]), "--baseline", str(files["baseline"]),
                            "--comparison", str(files["comparison"]), "--link", "run=https://ci.example/1"], capsys)
    assert code == 0
    assert "gate failed" in out  # the verdict recorded in the comparison file (a report never exits 1)
    assert "[workflow run](https://ci.example/1)" in out
    assert "```mermaid" in out  # the baseline's history


def test_baseline_without_comparison_is_compared_on_the_fly(files, capsys) -> None:
    code, out, err = run_cli(["report", "--results", str(files["results"]), "--baseline", str(files["baseline"])],
                             capsys)
    assert code == 0, err
    assert "Δ (paired)" in out and "95% CI" in out
    assert "24 lost, 14 gained" in out.splitlines()[1]
    assert "<details open><summary>🔎 What changed" in out


def test_html_to_a_file(files, tmp_path: Path, capsys) -> None:
    out_path = tmp_path / "report" / "index.html"
    code, out, _ = run_cli(["report", "--results", str(files["results"]), "--baseline", str(files["baseline"]),
                            "--comparison", str(files["comparison"]), "--format", "html", "--out", str(out_path)],
                           capsys)
    assert code == 0 and f"wrote {out_path}" in out
    doc = parse_html(out_path.read_text(encoding="utf-8"))
    assert doc.tag_names().count("svg") == 4  # 2 slice charts, the trend, the gold-rank shifts


def test_terminal_to_a_file_is_plain_text(files, tmp_path: Path, capsys) -> None:
    out_path = tmp_path / "report.txt"
    code, _, _ = run_cli(["report", "--results", str(files["results"]), "--comparison", str(files["comparison"]),
                          "--format", "terminal", "--out", str(out_path)], capsys)
    assert code == 0
    text = out_path.read_text(encoding="utf-8")
    assert "\x1b[" not in text
    assert "overall" in text and "hit@5" in text and "indicative" in text


def test_max_chars_cuts_and_zero_means_no_limit(files, capsys) -> None:
    args = ["report", "--results", str(files["results"]), "--comparison", str(files["comparison"])]
    code, short, _ = run_cli([*args, "--max-chars", "4000"], capsys)
    assert code == 0 and len(short) <= 4000 and "✂️" in short
    code, full, _ = run_cli([*args, "--max-chars", "0"], capsys)
    assert code == 0 and "✂️" not in full and len(full) > 4000


@pytest.mark.parametrize(("extra", "message"), [
    (["--format", "pdf"], "--format 'pdf'"),
    (["--format", "html", "--template", "x.j2"], "--template applies to --format markdown only"),
    (["--link", "run"], "--link 'run'"),
    (["--link", "run=javascript:alert(1)"], "http(s) URL"),
])
def test_usage_errors_exit_2(files, capsys, extra: list[str], message: str) -> None:
    code, _, err = run_cli(["report", "--results", str(files["results"]), *extra], capsys)
    assert code == 2
    assert message in err


def test_template_without_the_marker_exits_2_naming_the_file(files, tmp_path: Path, capsys) -> None:
    tpl = tmp_path / "mine.md.j2"
    tpl.write_text("## my comment\n{{ suite }}\n", encoding="utf-8")
    code, out, err = run_cli(["report", "--results", str(files["results"]), "--template", str(tpl)], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {tpl}: the rendered comment lacks the marker")


def test_template_extending_the_base_works(files, tmp_path: Path, capsys) -> None:
    tpl = tmp_path / "mine.md.j2"
    tpl.write_text('{% extends "comment.md.j2" %}{% block footer %}\n_custom footer_\n{% endblock %}\n',
                   encoding="utf-8")
    code, out, _ = run_cli(["report", "--results", str(files["results"]), "--template", str(tpl)], capsys)
    assert code == 0 and out.startswith(comment_marker("docs")) and "_custom footer_" in out


def test_bad_comparison_file_exits_2_naming_it(files, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "comparison.json"
    bad.write_text('{"rows": 3}', encoding="utf-8")
    code, _, err = run_cli(["report", "--results", str(files["results"]), "--comparison", str(bad)], capsys)
    assert code == 2 and f"error: {bad}: not a comparison file" in err
    bad.write_text("{nope", encoding="utf-8")
    code, _, err = run_cli(["report", "--results", str(files["results"]), "--comparison", str(bad)], capsys)
    assert code == 2 and f"error: {bad}:1: JSON syntax error" in err
