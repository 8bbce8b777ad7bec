"""The JUnit renderer on hand-built data: hostile ids and text always give a parsable file, the
characters XML 1.0 cannot hold are shown, and the document is the same bytes every time."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from junitparser import JUnitXml

from retrieval_gate.compare.changes import gate_reasons, stale_line
from retrieval_gate.compare.changes_model import ChangedCase, Displacer, GoldRank
from retrieval_gate.compare.model import CaseChange, Comparison
from retrieval_gate.render.junit import case_classname, render_junit, xml_text
from tests.unit.compare_data import make_case, make_results

XSD = Path(__file__).resolve().parents[1] / "data" / "junit" / "junit-10.xsd"  # Jenkins' xunit plugin's
HOSTILE = "q-\x1b[2J\u202e::error file=x::y<&>\"'\x00\ud800\ufffe]]>"


def _comparison(case_id: str) -> Comparison:
    change = ChangedCase(id=case_id, query="q", gold=[GoldRank(card="g<1>", rank_before=1, rank_after=None)],
                         movement="lost-hit", metric="ndcg@5", metric_before=1.0, metric_after=0.0,
                         displaced_by=[Displacer(card="\x07bad&card", rank=1)], cause="unjudged")
    lost = CaseChange(id=case_id, metric="hit@5", baseline=1.0, current=0.0, delta=-1.0)
    return Comparison(headline_k=5, metrics=["hit@5"], changed_cases=[change], lost_hits=[lost], verdict="fail",
                      failures=[f"hit@5 below its floor \x1b[31m{HOSTILE}"])


def test_xml_text_shows_what_xml_cannot_hold() -> None:
    assert xml_text("a\x00b\x1bc\td\ne") == "a\\x00b\\x1bc\td\ne"
    assert xml_text("\ud800\ufffe") == "\\ud800\\ufffe"


def test_hostile_ids_and_messages_give_a_parsable_file() -> None:
    results = make_results([make_case(HOSTILE, {"hit@5": 0.0}, query=HOSTILE), make_case("plain", {"hit@5": 1.0})])
    text = render_junit(results=results, comparison=_comparison(HOSTILE))
    root = ET.fromstring(text.encode("utf-8"))  # parses: nothing XML 1.0 forbids is in it
    names = [case.get("name") for case in root.iter("testcase")]
    assert names == [xml_text(HOSTILE), "plain", "gate"]
    xml = JUnitXml.fromstring(text)
    cases = {c.name: c for c in next(iter(xml))}
    assert "displaced by \\x07bad&card" in cases[xml_text(HOSTILE)].result[0].message
    assert "\\x1b[31m" in cases["gate"].result[0].message


def test_render_is_deterministic() -> None:
    results = make_results([make_case("a", {"hit@5": 1.0}), make_case("b", {"hit@5": 0.0})])
    assert render_junit(results=results, comparison=_comparison("b")) == render_junit(results=results,
                                                                                      comparison=_comparison("b"))


def test_classname_is_the_first_slice_value_other_than_kind_else_the_kind() -> None:
    with_locale = make_case("a", {}, slices=("overall", "kind=golden", "locale=pt-BR", "form=GAP"))
    only_kind = make_case("b", {}, slices=("overall", "kind=adversarial"))
    only_kind.kind = "adversarial"
    assert case_classname(suite="s", case=with_locale) == "s.pt-BR"
    assert case_classname(suite="s", case=only_kind) == "s.adversarial"


def test_c1_bidi_and_del_are_shown_and_the_rest_passes() -> None:
    assert xml_text("a\u202eb\u202ac\u2066d\u2069e\x85f\x9bg\x7fh") == (
        "a\\u202eb\\u202ac\\u2066d\\u2069e\\x85f\\x9bg\\x7fh")
    assert xml_text("é ü 中文 \u200b \u00a0 → ·") == "é ü 中文 \u200b \u00a0 → ·"  # printable text is left alone


def test_a_cr_survives_a_parser_in_text_and_attributes() -> None:
    results = make_results([make_case("id\rcr", {"hit@5": 0.0}, query="line one\rline two\r\nthree")])
    text = render_junit(results=results, comparison=_comparison("id\rcr"))
    assert "\r" not in text and "&#13;" in text
    root = ET.fromstring(text.encode("utf-8"))
    case = next(c for c in root.iter("testcase") if c.get("name") != "gate")
    assert case.get("name") == "id\rcr"
    assert case.find("failure").text.endswith("query: line one\rline two\r\nthree")  # type: ignore[union-attr]


def test_every_reason_is_in_the_message_and_in_the_text() -> None:
    failed = make_case("f", {}, status="failed")
    failed.error = "timeout after 30 s"
    skipped = make_case("s", {}, status="no_gold")
    results = make_results([failed, skipped, make_case("l", {"hit@5": 0.0})])
    root = ET.fromstring(render_junit(results=results, comparison=_comparison("l")).encode("utf-8"))
    outcomes = {c.get("name"): next(iter(c)) for c in root.iter("testcase")}
    assert outcomes["f"].tag == "error" and outcomes["f"].get("message") == "failed: timeout after 30 s"
    assert outcomes["f"].text == "failed: timeout after 30 s\nquery: question f"
    assert outcomes["s"].tag == "skipped"
    assert (outcomes["s"].text or "").startswith(outcomes["s"].get("message") or "-") and "query: question s" in (
        outcomes["s"].text or "")
    assert (outcomes["l"].text or "").startswith(outcomes["l"].get("message") or "-")


def test_the_gate_message_is_the_failed_rules_never_the_stale_labels_hint() -> None:
    results = make_results([make_case("a", {"hit@5": 0.0})])
    hint = stale_line(["g1", "g2"])
    comparison = _comparison("a").model_copy(update={
        "stale_gold_cards": ["g1", "g2"],
        "failures": [hint, "hit@5 on overall: 0.5 is below the floor 0.9 (n=2)", "ndcg@5 regressed by 0.2"]})
    gate = next(c for c in ET.fromstring(render_junit(results=results, comparison=comparison).encode("utf-8"))
                .iter("testcase") if c.get("name") == "gate").find("failure")
    assert gate is not None
    assert gate.get("message") == "hit@5 on overall: 0.5 is below the floor 0.9 (n=2); ndcg@5 regressed by 0.2"
    assert gate.text == ("hit@5 on overall: 0.5 is below the floor 0.9 (n=2); ndcg@5 regressed by 0.2\n"
                         f"{hint}")
    assert gate_reasons(comparison) == (["hit@5 on overall: 0.5 is below the floor 0.9 (n=2)",
                                         "ndcg@5 regressed by 0.2"], [hint])


def test_time_on_every_suite_is_the_sum_of_the_measured_cases() -> None:
    cases = [make_case(f"c{i}", {"hit@5": 1.0}) for i in range(4)]
    for case, ms in zip(cases, (12.0, 250.4, 1000.0, None), strict=True):
        case.latency_ms = ms
    root = ET.fromstring(render_junit(results=make_results(cases), comparison=None).encode("utf-8"))
    assert root.get("time") == "1.262" and root.find("testsuite").get("time") == "1.262"  # type: ignore[union-attr]
    assert [c.get("time") for c in root.iter("testcase")] == ["0.012", "0.250", "1.000", None]
    bare = ET.fromstring(render_junit(results=make_results(cases[3:]), comparison=None).encode("utf-8"))
    assert bare.get("time") == "0.000" and bare.find("testsuite").get("time") == "0.000"  # type: ignore[union-attr]


def test_the_gate_testcase_names_the_config_file_else_the_cases_file() -> None:
    results = make_results([make_case("a", {"hit@5": 0.0})])

    def gate_file(config_file: str | None) -> str | None:
        text = render_junit(results=results, comparison=_comparison("a"), config_file=config_file)
        return next(c for c in ET.fromstring(text.encode("utf-8")).iter("testcase") if c.get("name") == "gate").get(
            "file")

    assert gate_file("retrieval-gate.yml") == "retrieval-gate.yml"
    assert gate_file(None) == "cases"  # make_results' cases path


def test_the_jenkins_schema_is_valid_against_the_xunit_xsd_even_with_hostile_text() -> None:
    schema = xmlschema.XMLSchema(str(XSD))
    skipped = make_case("nogold", {}, status="no_gold")
    timed = make_case("timed", {"hit@5": 1.0})
    timed.latency_ms, timed.line = 12345678.9, 3
    results = make_results([make_case(HOSTILE, {"hit@5": 0.0}, query=HOSTILE), skipped, timed])
    jenkins = render_junit(results=results, comparison=_comparison(HOSTILE), config_file="retrieval-gate.yml",
                           schema="jenkins")
    schema.validate(jenkins)
    root = ET.fromstring(jenkins.encode("utf-8"))
    assert all(c.get("file") is None and c.get("line") is None for c in root.iter("testcase"))
    assert root.get("skipped") is None and root.find("testsuite").get("skipped") == "1"  # type: ignore[union-attr]
    default = render_junit(results=results, comparison=_comparison(HOSTILE), config_file="retrieval-gate.yml")
    assert not schema.is_valid(default)  # file / line on a testcase, skipped on testsuites
    assert default.replace(' file="cases"', "").replace(' file="retrieval-gate.yml"', "").replace(
        ' line="3"', "").replace(' skipped="1" time', " time", 1) == jenkins  # otherwise the same document


def test_an_unknown_schema_is_refused() -> None:
    with pytest.raises(ValueError, match="jenkins"):
        render_junit(results=make_results([]), comparison=None, schema="surefire")
