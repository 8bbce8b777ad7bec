"""The JUnit renderer on hand-built data: hostile ids and text always give a parsable file, the
characters XML 1.0 cannot hold are shown, and the document is the same bytes every time."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from junitparser import JUnitXml

from retrieval_gate.compare.changes_model import ChangedCase, Displacer, GoldRank
from retrieval_gate.compare.model import CaseChange, Comparison
from retrieval_gate.render.junit import case_classname, render_junit, xml_text
from tests.unit.compare_data import make_case, make_results

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
