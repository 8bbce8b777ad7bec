"""JUnit XML for any CI's test widget (GitLab's merge-request widget, Jenkins, Azure, CircleCI):
one ``<testsuite>`` per suite, one ``<testcase>`` per expected case, in the golden set's order.
Pure (text out).

A case is a ``<failure>`` when it lost its hit against the baseline (the message is the comment's
"what changed" line: gold rank before → after, the card that displaced it, the cause) and an
``<error>`` when it failed to run; a case that got worse without losing its hit passes with that
line in ``<system-out>``; a case with no gold that was not scored is ``<skipped>``. When the gate
fails, one more ``<testcase name="gate">`` carries the failed rules.

The XML is built with the standard library's ElementTree (which escapes ``& < > "``); characters
XML 1.0 cannot hold at all (C0 controls but tab / LF / CR, lone surrogates, U+FFFE / U+FFFF) are
replaced by a visible ``\\xNN`` / ``\\uNNNN`` first, so a hostile id never makes the file unparsable.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from retrieval_gate.compare.changes_model import ChangedCase
from retrieval_gate.compare.model import Comparison
from retrieval_gate.render.changes import change_line
from retrieval_gate.score.results import CaseResult, Results
from retrieval_gate.score.scoring import OVERALL

# Everything XML 1.0 forbids: #x0-#x8, #xB, #xC, #xE-#x1F, surrogates, #xFFFE, #xFFFF.
_NOT_XML_RE = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: object) -> str:
    """``text`` with every character XML 1.0 cannot carry shown as ``\\xNN`` / ``\\uNNNN``."""

    def visible(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _NOT_XML_RE.sub(visible, "" if text is None else str(text))


def case_classname(*, suite: str, case: CaseResult) -> str:
    """``<suite>.<value of the case's first slice field other than kind>``, else ``<suite>.<kind>``:
    ``default.en-US``, ``default.golden``."""
    for slice_name in case.slices:
        field, sep, value = slice_name.partition("=")
        if sep and slice_name != OVERALL and field != "kind" and value:
            return f"{suite}.{value}"
    return f"{suite}.{case.kind}"


def _set(element: ET.Element, name: str, value: object) -> None:
    element.set(name, xml_text(value))


def _lost_message(change: ChangedCase, *, rankings: bool) -> str:
    return f"lost its hit: {change_line(change, rankings=rankings).text}"


def render_junit(*, results: Results, comparison: Comparison | None) -> str:
    """The JUnit XML document (UTF-8 text, with the XML declaration) for ``results``, judged
    against ``comparison`` where there is one (no comparison: only failed cases fail)."""
    changes = {c.id: c for c in comparison.changed_cases} if comparison is not None else {}
    rankings = comparison.baseline_rankings if comparison is not None else True
    lost_ids = {c.id for c in comparison.lost_hits} if comparison is not None else set()
    cases_path = results.inputs["cases"].path if "cases" in results.inputs else None

    suite_el = ET.Element("testsuite")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for case in results.cases:
        counts["tests"] += 1
        test = ET.SubElement(suite_el, "testcase")
        _set(test, "name", case.id)
        _set(test, "classname", case_classname(suite=results.suite, case=case))
        if cases_path is not None:
            _set(test, "file", cases_path)
        if case.line is not None:
            test.set("line", str(case.line))
        if case.latency_ms is not None:
            test.set("time", f"{case.latency_ms / 1000:.3f}")
        change = changes.get(case.id)
        if case.status == "failed":
            counts["errors"] += 1
            error = ET.SubElement(test, "error")
            _set(error, "message", f"failed: {case.error or 'no result'}")
            _set(error, "type", "failed")
        elif (change is not None and change.movement == "lost-hit") or case.id in lost_ids:
            counts["failures"] += 1
            failure = ET.SubElement(test, "failure")
            message = (_lost_message(change, rankings=rankings) if change is not None
                       else "lost its hit (no ranking detail: see comparison.json)")
            _set(failure, "message", message)
            _set(failure, "type", "lost-hit")
            failure.text = xml_text(f"{case.query}\n{message}")
        elif case.status == "no_gold" and not case.scores:
            counts["skipped"] += 1
            skipped = ET.SubElement(test, "skipped")
            _set(skipped, "message", "no gold: this case is not scored (a no-answer case without a score threshold)")
        elif change is not None and change.movement == "worse":
            out = ET.SubElement(test, "system-out")
            out.text = xml_text(f"got worse without losing its hit: {change_line(change, rankings=rankings).text}")
    if comparison is not None and comparison.verdict == "fail":
        counts["tests"] += 1
        counts["failures"] += 1
        gate = ET.SubElement(suite_el, "testcase")
        gate.set("name", "gate")
        _set(gate, "classname", f"{results.suite}.gate")
        failure = ET.SubElement(gate, "failure")
        _set(failure, "message", comparison.failures[0] if comparison.failures else "the gate failed")
        _set(failure, "type", "gate")
        failure.text = xml_text("\n".join(comparison.failures))
    _set(suite_el, "name", results.suite)
    for key, value in counts.items():
        suite_el.set(key, str(value))
    root = ET.Element("testsuites")
    root.append(suite_el)
    for key, value in counts.items():
        root.set(key, str(value))
    _set(root, "name", "retrieval-gate")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
