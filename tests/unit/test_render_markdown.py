"""The PR comment and job summary (render/markdown.py + templates/comment.md.j2).

Golden files pin the whole text (regenerate: ``RG_UPDATE_GOLDEN=1 pytest tests/unit/test_render_markdown.py``
or ``python -m tests.golden.regenerate``, then read the diff). The facts a reviewer relies on are
also asserted independently: numbers recomputed here from the synthetic rankings, the tables read
back with an independent Markdown parser."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.forge.github import GitHub
from retrieval_gate.models import Case, RankedList
from retrieval_gate.render.markdown import comment_marker, render_comment, render_summary
from tests.golden import scenarios as sc
from tests.golden.readers import BARE_URL, ISSUE_REF, MENTION, parse_markdown, visible
from tests.golden.regenerate import golden_path, render

UPDATE = os.environ.get("RG_UPDATE_GOLDEN") == "1"


def hits_at_5(cases: Sequence[Case], rankings: dict[str, RankedList]) -> dict[str, int]:
    """hit@5 by hand: 1 when any gold card is among the first 5 distinct ids (cases with gold only;
    a case missing from the run counts as 0)."""
    out = {}
    for case in cases:
        if case.gold:
            ids = list(dict.fromkeys(rankings[case.id].ids))[:5] if case.id in rankings else []
            out[case.id] = int(any(g in ids for g in case.gold))
    return out


def headline_table(text: str) -> list[list[str]]:
    doc = parse_markdown(text)
    table = next(t for t in doc.tables if t[0][0].startswith("k = "))
    return table


def table_after(text: str, heading: str) -> list[list[str]]:
    return parse_markdown(text[text.index(heading):]).tables[0]


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple[sc.Scenario, str]]:
    out = {}
    for name, build in sc.SCENARIOS.items():
        scenario = build()
        out[name] = (scenario, render(scenario))
    return out


@pytest.mark.parametrize("name", list(sc.SCENARIOS))
def test_comment_matches_golden_file(name: str, rendered) -> None:
    _, text = rendered[name]
    path = golden_path(name)
    if UPDATE:
        path.write_text(text, encoding="utf-8", newline="\n")
    assert path.is_file(), f"missing {path}: run RG_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", list(sc.SCENARIOS))
def test_marker_is_the_first_line_and_every_table_is_rectangular(name: str, rendered) -> None:
    scenario, text = rendered[name]
    assert text.splitlines()[0] == comment_marker(scenario.results.suite)
    assert len(text) <= 65_000
    for table in parse_markdown(text).tables:
        assert len({len(row) for row in table}) == 1, table


def test_first_run_says_so_and_shows_hit_first_with_the_true_n_and_value(rendered) -> None:
    _, text = rendered["first_run"]
    cases = sc.make_cases(40, no_gold_every=10)
    hits = hits_at_5(cases, sc.make_rankings(cases, quality=0.7, seed=2))
    assert len(hits) == 36  # every 10th case of 40 has no gold
    assert "First run: there is no baseline" in text
    table = headline_table(text)
    assert table[0] == ["k = 5", "this run", "n"]
    assert [row[0] for row in table[1:]] == ["hit@5", "recall@5 ¹", "nDCG@5"]
    assert table[1][1] == f"{sum(hits.values()) / 36:.3f}"
    assert {row[2] for row in table[1:]} == {"36"}
    assert "Δ" not in text and "```mermaid" not in text  # nothing to compare, no history


def test_recall_caveat_is_worded_once_right_under_the_headline(rendered) -> None:
    for name in sc.SCENARIOS:
        _, text = rendered[name]
        assert text.count("lower bound") == 1, name
        table_end = text.index("| **nDCG@5**")
        caveat = text.index("recall@5 is a lower bound")
        assert 0 < caveat - table_end < 200, name
        assert caveat < text.index("**Cases:**")


def test_improvement_delta_is_the_paired_mean_computed_by_hand(rendered) -> None:
    _, text = rendered["improvement"]
    cases = sc.make_cases(120)
    before = hits_at_5(cases, sc.make_rankings(cases, quality=0.55, seed=3))
    after = hits_at_5(cases, sc.make_rankings(cases, quality=0.85, seed=4))
    delta = sum(after[c] - before[c] for c in before) / len(before)
    hit = headline_table(text)[1]
    assert hit[0] == "hit@5"
    assert hit[1] == f"{sum(before.values()) / 120:.3f}" and hit[2] == f"{sum(after.values()) / 120:.3f}"
    assert hit[3] == f"🟢 ▲ +{delta:.3f}"
    assert hit[5] == "120"
    assert text.splitlines()[1].startswith("### 🟢")


def test_regression_with_gate_on_shows_the_failures_and_the_lost_hits_open(rendered) -> None:
    scenario, text = rendered["regression"]
    cases = sc.make_cases(90, tag_values=2)
    before = hits_at_5(cases, sc.make_rankings(cases, quality=0.85, seed=5))
    after = hits_at_5(cases, sc.make_rankings(cases, quality=0.55, seed=6))
    lost = sorted(c for c in before if before[c] == 1 and after[c] == 0)
    gained = sorted(c for c in before if before[c] == 0 and after[c] == 1)
    assert (f"### ❌ Retrieval · docs · {len(lost)} lost, {len(gained)} gained — gate failed: hit@5 dropped 0.111"
            in text)
    for failure in scenario.comparison.failures:
        assert f"- {failure}" in text
    section = text[text.index("<details open><summary>🔎 What changed"):]
    section = section[:section.index("</details>")]
    assert f"· {len(lost)} lost hits: {len(lost)} ranking ·" in section
    assert f"· {len(gained)} gained hits: {len(gained)} ranking" in section
    shown_lost = sorted(line.split("**")[1] for line in section.splitlines() if line.startswith("- 🔻 "))
    assert shown_lost == lost  # every lost case, one line each
    shown_gained = sorted(line.split("**")[1] for line in section.splitlines() if line.startswith("- 🔺 "))
    assert shown_gained == gained
    assert section.index("- 🔻 ") < section.index("**Got better**") < section.index("- 🔺 ")
    assert "label it" not in section  # the regression scenario's cause is "ranking"
    assert "hit@5 ≥ 0.7" in text  # the gate knobs in force are named


def test_config_change_is_not_like_for_like_before_the_numbers(rendered) -> None:
    _, text = rendered["config_change"]
    warning = text.index("**Not like-for-like:**")
    assert warning < text.index("| k = 5 |")
    assert "(model, chunking)" in text
    assert "5 added, 3 removed since the baseline" in text  # 60 cases: baseline 0–54, now 3–59
    assert "**Added:** q0055, q0056, q0057, q0058, q0059" in text
    assert "**Removed:** q0000, q0001, q0002" in text
    changes = table_after(text, "⚙️ Configuration changes")
    assert changes[1] == ["model", "all-MiniLM-L6-v2", "bge-small-en-v1.5"]
    hit = headline_table(text)[1]
    assert hit[5] == "52 (57 now, 55 before)"  # paired n, then each run's own n


def test_slice_rows_carry_their_own_n_and_small_ones_are_indicative(rendered) -> None:
    _, text = rendered["first_run"]
    cases = sc.make_cases(40, no_gold_every=10)
    counts: dict[str, int] = {}
    for case in cases:
        if case.gold:
            for field, value in case.slice_values().items():
                label = field.replace("_", " ").replace("tag.", "tag ")
                counts[f"{label} = {value}"] = counts.get(f"{label} = {value}", 0) + 1
    rows = table_after(text, "#### By slice")[1:]
    assert len(rows) == len(counts)
    for row in rows:
        name = row[0].replace(" · indicative", "")
        assert int(row[1]) == counts[name], name
        assert ("indicative" in row[0]) == (counts[name] < 30), name


def test_huge_input_fits_under_githubs_limit_and_says_what_was_cut(rendered) -> None:
    _, text = rendered["huge"]
    assert len(text) < GitHub.limits.comment_chars
    cases = sc.make_cases(sc.HUGE_CASES, tag_values=sc.HUGE_TAGS)
    before = hits_at_5(cases, sc.make_rankings(cases, quality=0.75, seed=9))
    after = hits_at_5(cases, sc.make_rankings(cases, quality=0.7, seed=10))
    n_lost = sum(1 for c in before if before[c] == 1 and after[c] == 0)
    assert f"· {n_lost:,} lost hits: {n_lost:,} ranking ·" in text
    n_worse = int(re.search(r"\*\*Got worse\*\* \(([\d,]+)\)", text).group(1).replace(",", ""))
    notice = next(line for line in text.splitlines() if "✂️" in line)
    shown = int(re.search(r"([\d,]+) of ([\d,]+) cases that got worse", notice).group(1))
    assert f"{shown} of {n_worse:,} cases that got worse" in notice and n_worse > n_lost
    assert f"- … and {n_worse - shown:,} more in the HTML report" in text
    lost_lines = [line for line in text.splitlines() if line.startswith("- 🔻 ")]
    assert len(lost_lines) == min(shown, n_lost)  # lost hits first
    assert "[workflow run](https://github.com/acme/docs/actions/runs/42)" in notice
    assert notice.startswith("> ")  # a quote block of its own, before the numbers
    assert text.index("✂️") < text.index("| k = 5 |")
    assert "| 3,000 |" in text


def test_the_cut_notice_names_no_one_forge_at_another_forges_limit() -> None:
    """GitLab's notes hold 1,000,000 characters, GitHub's comments 65,536: a comment cut to any
    limit says the number it was cut to, never another forge's rule."""
    scenario = sc.huge()
    text = render_comment(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline,
                          max_chars=20_000)
    notice = next(line for line in text.splitlines() if "✂️" in line)
    assert "Shortened** to 20,000 characters (to fit the forge's limit on one comment)" in notice
    assert "GitHub" not in notice and "65,536" not in notice


def test_slices_are_trimmed_only_after_the_case_lists_keeping_the_worst() -> None:
    scenario = sc.huge()
    full = render_summary(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline)
    text = render_comment(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline,
                          max_chars=8_000)
    assert len(text) <= 8_000
    notice = next(line for line in text.splitlines() if "✂️" in line)
    assert re.search(r"0 of [\d,]+ cases that got worse", notice) and re.search(r"(\d+) of (\d+) slices", notice)
    shown, total = map(int, re.search(r"(\d+) of (\d+) slices", notice).groups())
    rows = table_after(text, "#### By slice")[1:]
    assert len(rows) == shown < total
    full_rows = table_after(full, "#### By slice")[1:]
    assert len(full_rows) == total
    # kept: rows with a regressed cell first (render.cells.slice_priority)
    bad_slices = {r.slice for r in scenario.comparison.rows if r.status in ("regressed", "below_floor")}
    bad = {r[0] for r in full_rows if r[0].replace(" = ", "=").replace("tag team", "tag.team")
           .replace("hard class", "hard_class") in bad_slices}
    kept = {r[0] for r in rows}
    assert bad
    assert kept <= bad if len(bad) >= shown else bad <= kept
    assert f"{total - shown} more slices in the full report." in text


def test_hard_cut_is_the_last_resort_and_keeps_the_marker() -> None:
    scenario = sc.huge()
    text = render_comment(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline,
                          links=scenario.links, max_chars=1_500)
    assert len(text) <= 1_500
    assert text.startswith(comment_marker("docs"))
    assert "Cut here" in text and "[workflow run](" in text


def test_job_summary_is_the_same_text_uncut(rendered) -> None:
    scenario, text = rendered["improvement"]
    assert render_summary(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline,
                          links=scenario.links) == text
    huge = sc.huge()
    summary = render_summary(results=huge.results, comparison=huge.comparison, baseline=huge.baseline)
    assert "✂️" not in summary
    assert sum(1 for line in summary.splitlines() if line.startswith("- 🔻 ")) == len(huge.comparison.lost_hits)
    n_worse = sum(1 for c in huge.comparison.changed_cases if c.movement in ("lost-hit", "worse"))
    assert n_worse > 1_000 and f"- … and {n_worse - 1_000:,} more in the HTML report" in summary  # 1,000 at most


def test_job_summary_can_be_held_under_a_byte_limit() -> None:
    huge = sc.huge()
    kw = {"results": huge.results, "comparison": huge.comparison, "baseline": huge.baseline}
    full = render_summary(**kw)
    assert len(full.encode()) > 200_000
    text = render_summary(**kw, max_bytes=200_000)
    assert len(text.encode()) <= 200_000
    notice = next(line for line in text.splitlines() if "✂️" in line)
    assert "200,000 bytes (to fit the job summary's limit)" in notice
    assert "The full report is the HTML report" in notice
    assert render_summary(**kw, max_bytes=10_000_000) == full


def test_hostile_data_is_inert_in_the_whole_comment(rendered) -> None:
    _, text = rendered["hostile"]
    doc = parse_markdown(text)
    allowed = {"h3", "h4", "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "strong", "em", "sub",
               "details", "summary", "blockquote", "code", "pre"}
    assert set(doc.tag_names()) <= allowed
    assert not MENTION.search(doc.text) and not BARE_URL.search(doc.text)  # what GitHub's filters see
    assert not ISSUE_REF.search(doc.text)
    seen = visible(doc.text)  # what a reader sees
    assert "q|1`x <script>alert(1)</script>" in seen  # the failed, lost case reads as itself
    assert sc.HOSTILE_QUERY.replace("\n", " ") in seen
    assert "pt|BR @all" in seen and "@team|<b>x</b>" in seen
    assert text.splitlines()[0] == "<!-- retrieval-gate:docs_-____b_ -->"


def test_mermaid_trend_uses_only_safe_labels_and_the_real_values(rendered) -> None:
    scenario, text = rendered["improvement"]
    block = text[text.index("```mermaid"):text.index("```", text.index("```mermaid") + 3)]
    values = [e.headline["hit@5"] for e in scenario.baseline.history]
    values.append(scenario.results.aggregates["overall"]["hit@5"].value)
    assert f"line [{', '.join(f'{v:.3f}' for v in values)}]" in block
    assert re.search(r'x-axis \[("[A-Za-z0-9. _-]+"(, )?)+\]', block)
    spark = re.search(r"`([▁▂▃▄▅▆▇█]+)`", text).group(1)
    assert len(spark) == len(values)


def test_links_only_http_and_https() -> None:
    scenario = sc.first_run()
    text = render_comment(results=scenario.results, links={"run": "https://ci.example/run/1",
                                                           "evil": "javascript:alert(1)",
                                                           "artifact": "https://ci.example/a b(c)"})
    assert "[workflow run](https://ci.example/run/1)" in text
    assert "javascript" not in text
    assert "(https://ci.example/a%20b%28c%29)" in text


# --- custom templates --------------------------------------------------------------------------

def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def test_custom_template_extends_the_base_and_overrides_a_block(tmp_path: Path) -> None:
    scenario = sc.regression()
    tpl = write(tmp_path, "mine.md.j2", '{% extends "comment.md.j2" %}{% block footer %}\nOwned by '
                '{{ results.cases[0].query }} @ {{ suite }}\n{% endblock %}')
    text = render_comment(results=scenario.results, comparison=scenario.comparison, baseline=scenario.baseline,
                          template=tpl)
    assert text.startswith(comment_marker("docs"))
    assert text.rstrip().endswith("Owned by how do I configure feature 0? @ docs")
    assert "retrieval-gate 0.1.0 · suite" not in text  # the base footer was replaced
    assert "| **hit@5** |" in text


def test_custom_template_output_is_escaped_automatically(tmp_path: Path) -> None:
    scenario = sc.hostile()
    tpl = write(tmp_path, "mine.md.j2", "{{ marker }}\n{% for c in results.cases %}- {{ c.id }}\n{% endfor %}")
    text = render_comment(results=scenario.results, template=tpl)
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_custom_template_may_include_its_own_partials(tmp_path: Path) -> None:
    write(tmp_path, "part.md.j2", "partial for {{ suite }}")
    tpl = write(tmp_path, "mine.md.j2", '{% extends "comment.md.j2" %}{% block footer %}\n'
                '{% include "part.md.j2" %}\n{% endblock %}')
    text = render_comment(results=sc.first_run().results, template=tpl)
    assert "partial for docs" in text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("# my own comment without the marker\n{{ suite }}", "lacks the marker"),
        ('{% extends "comment.md.j2" %}{% block header %}{% endblock %}{% block verdict %}{% endblock %}'
         "{{ '' }}", None),  # extends and keeps the marker: fine
        ("{{ marker }}\n{% if %}", "template syntax error"),
        ("{{ marker }}\n{{ nope.attr }}", "template error"),
        ("{{ marker }}\n{{ results.__class__.__mro__ }}", "template error"),
        ("{{ marker }}\n{{ ''.__class__.__mro__[1].__subclasses__() }}", "template error"),
        ('{{ marker }}\n{% include "/etc/passwd" %}', "template not found"),
    ],
)
def test_custom_template_problems_are_input_errors(tmp_path: Path, body: str, message: str | None) -> None:
    tpl = write(tmp_path, "mine.md.j2", body)
    results = sc.first_run().results
    if message is None:
        assert render_comment(results=results, template=tpl).startswith(comment_marker("docs"))
        return
    with pytest.raises(InputError) as info:
        render_comment(results=results, template=tpl)
    assert message in str(info.value)
    assert str(tpl) in str(info.value)


def test_syntax_error_names_the_line(tmp_path: Path) -> None:
    tpl = write(tmp_path, "mine.md.j2", "{{ marker }}\nline two\n{% for %}\n")
    with pytest.raises(InputError) as info:
        render_comment(results=sc.first_run().results, template=tpl)
    assert info.value.problems[0].line == 3


def test_summary_also_requires_the_marker(tmp_path: Path) -> None:
    tpl = write(tmp_path, "mine.md.j2", "no marker")
    with pytest.raises(InputError):
        render_summary(results=sc.first_run().results, template=tpl)


def test_a_baseline_without_rankings_is_said_once_and_its_ranks_before_are_unknown() -> None:
    scenario = sc.regression()
    comparison = scenario.comparison.model_copy(update={"baseline_rankings": False})
    text = render_comment(results=scenario.results, comparison=comparison, baseline=scenario.baseline)
    assert text.count("ranks before are unknown") == 1
    first = next(line for line in text.splitlines() if line.startswith("- 🔻 "))
    assert " ? → " in first  # not "—": unknown, not absent
