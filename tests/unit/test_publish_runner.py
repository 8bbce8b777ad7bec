"""Runner protocols: $GITHUB_OUTPUT heredoc entries, workflow-command escaping, annotations cap."""

from __future__ import annotations

import io

import pytest

from retrieval_gate.forge.github import GitHub
from retrieval_gate.publish.runner import Runner, escape_data, escape_property, format_output, workflow_command


def test_output_entry_is_a_heredoc_with_the_given_delimiter():
    assert format_output("hit_at_k", "0.8000", delimiter="EOF_x") == "hit_at_k<<EOF_x\n0.8000\nEOF_x\n"


def test_multiline_value_survives_and_random_delimiters_differ():
    value = "line 1\nline 2\nname=injected"
    a, b = format_output("body", value), format_output("body", value)
    assert a != b
    head, *body, tail, _ = a.split("\n")
    assert head == f"body<<{tail}" and "\n".join(body) == value


@pytest.mark.parametrize(("name", "value"), [("x", "abc EOF_x"), ("bad=name", "v"), ("", "v"), ("a\nb", "v")])
def test_output_refuses_collisions_and_bad_names(name, value):
    with pytest.raises(ValueError):
        format_output(name, value, delimiter="EOF_x")


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("50% drop", "50%25 drop", "50%25 drop"),
        ("a\nb\r", "a%0Ab%0D", "a%0Ab%0D"),
        ("hit@5: a, b", "hit@5: a, b", "hit@5%3A a%2C b"),
    ],
)
def test_escaping(text, data, prop):
    assert escape_data(text) == data
    assert escape_property(text) == prop


def test_workflow_command_escapes_message_and_properties():
    line = workflow_command("warning", "hit@5 dropped\n5%", title="rg: hit@5, overall")
    assert line == "::warning title=rg%3A hit@5%2C overall::hit@5 dropped%0A5%25"


def test_annotations_beyond_ten_per_level_become_plain_log_lines(tmp_path):
    stream = io.StringIO()
    runner = Runner(stream=stream)
    for i in range(12):
        runner.annotate("warning", f"w{i}")
    runner.annotate("error", "e0")
    lines = stream.getvalue().splitlines()
    assert sum(line.startswith("::warning") for line in lines) == 10
    assert lines[10:12] == ["warning: w10", "warning: w11"] and lines[12].startswith("::error")


def test_outputs_and_summary_are_appended_not_overwritten(tmp_path):
    out, summary = tmp_path / "out", tmp_path / "summary"
    out.write_text("earlier=step\n", encoding="utf-8")
    summary.write_text("# earlier step\n", encoding="utf-8")
    runner = Runner(output_file=out, summary_file=summary, stream=io.StringIO())
    runner.set_outputs({"a": "1"})
    assert runner.append_summary("## ours")
    assert out.read_text(encoding="utf-8").startswith("earlier=step\na<<ghadelimiter_")
    assert summary.read_text(encoding="utf-8") == "# earlier step\n## ours\n"


def test_summary_over_one_mebibyte_is_refused(tmp_path):
    summary = tmp_path / "summary"
    runner = Runner(summary_file=summary, stream=io.StringIO(), summary_limit_bytes=GitHub.limits.summary_bytes)
    assert not runner.append_summary("x" * (1024 * 1024 + 1))
    assert not summary.exists()


def test_no_runner_files_outside_actions():
    runner = Runner(stream=io.StringIO())
    runner.set_outputs({"a": "1"})
    assert runner.append_summary("text")


def test_an_annotation_can_point_at_a_line_of_a_file():
    stream = io.StringIO()
    runner = Runner(stream=stream)
    runner.annotate("warning", "c1 lost its hit: a, b", title="t: x", file="data/cases.jsonl", line=3)
    assert stream.getvalue() == "::warning file=data/cases.jsonl,line=3,title=t%3A x::c1 lost its hit: a, b\n"
    for _ in range(10):
        runner.annotate("warning", "m", file="f.jsonl", line=9)
    assert runner.annotations[-1] == "warning: f.jsonl:9: m"  # past GitHub's 10: a log line with the place
