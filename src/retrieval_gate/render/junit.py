"""JUnit XML for any CI's test widget (GitLab's merge-request widget, Jenkins, Azure, CircleCI):
one ``<testsuite>`` per suite, one ``<testcase>`` per expected case, in the golden set's order.
Pure (text out).

A case is a ``<failure>`` when it lost its hit against the baseline (the message is the comment's
"what changed" line: gold rank before → after, the card that displaced it, the cause) and an
``<error>`` when it failed to run; a case that got worse without losing its hit passes with that
line in ``<system-out>``; a case with no gold that was not scored is ``<skipped>``. When the gate
fails, one more ``<testcase name="gate">`` carries the failed rules (its ``file``: the config file).
Every reason is both the ``message`` attribute and the element's text: GitLab shows only the text
(an element without one shows as a hash of its attributes), Jenkins and the GitHub actions the
message. Every ``<testsuite>`` and the ``<testsuites>`` carry a ``time``.

``schema="jenkins"`` leaves out what the xunit plugin's JUnit XSD (junit-10.xsd) refuses: ``file``
and ``line`` on a testcase, ``skipped`` on ``<testsuites>``.

The XML is built with the standard library's ElementTree (which escapes ``& < > "``); characters
XML 1.0 cannot hold at all (C0 controls but tab / LF / CR, lone surrogates, U+FFFE / U+FFFF), C1
controls (U+0080–U+009F) and DEL, the bidi embeddings, overrides and isolates (U+202A–U+202E,
U+2066–U+2069) are replaced by a visible ``\\xNN`` / ``\\uNNNN`` first, so a hostile id never makes
the file unparsable nor reorders what a widget shows. A CR is written ``&#13;`` (attributes and
text alike), so a parser keeps it instead of turning it into a LF.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from decimal import Decimal

from retrieval_gate.compare.changes import gate_reasons
from retrieval_gate.compare.changes_model import ChangedCase
from retrieval_gate.compare.model import Comparison, gate_fails
from retrieval_gate.render.changes import change_line
from retrieval_gate.render.verdict import DECISIVE_TOP_UP_COMMAND, needs_labels_words
from retrieval_gate.score.results import CaseResult, Results
from retrieval_gate.score.scoring import OVERALL

SCHEMAS = ("default", "jenkins")  # report --junit-schema

# Everything XML 1.0 forbids (#x0-#x8, #xB, #xC, #xE-#x1F, surrogates, #xFFFE, #xFFFF), DEL, the C1
# controls and the bidi embeddings / overrides / isolates.
_NOT_SHOWN_RE = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069"
                           "\ud800-\udfff\ufffe\uffff]")


def xml_text(text: object) -> str:
    """``text`` with every character XML 1.0 cannot carry, every C1 control and every bidi
    embedding / override / isolate shown as ``\\xNN`` / ``\\uNNNN``."""

    def visible(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _NOT_SHOWN_RE.sub(visible, "" if text is None else str(text))


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


def _outcome(test: ET.Element, tag: str, *, message: str, kind: str | None, detail: str) -> None:
    """``<tag message=… type=…>message + detail</tag>`` under ``test``: the reason in the attribute
    and in the text."""
    element = ET.SubElement(test, tag)
    _set(element, "message", message)
    if kind is not None:
        _set(element, "type", kind)
    element.text = xml_text(f"{message}\n{detail}" if detail else message)


def _lost_message(change: ChangedCase, *, rankings: bool) -> str:
    return f"lost its hit: {change_line(change, rankings=rankings).text}"


def _seconds(latency_ms: float) -> str:
    return f"{latency_ms / 1000:.3f}"


def render_junit(*, results: Results, comparison: Comparison | None, config_file: str | None = None,
                 schema: str = "default") -> str:
    """The JUnit XML document (UTF-8 text, with the XML declaration) for ``results``, judged
    against ``comparison`` where there is one (no comparison: only failed cases fail).
    ``config_file``: the gate testcase's ``file`` (default: the cases file); ``schema``: one of
    ``SCHEMAS`` (``jenkins``: what the xunit plugin's XSD accepts)."""
    if schema not in SCHEMAS:
        raise ValueError(f"schema {schema!r}: expected one of {', '.join(SCHEMAS)}")
    locations = schema != "jenkins"
    changes = {c.id: c for c in comparison.changed_cases} if comparison is not None else {}
    rankings = comparison.baseline_rankings if comparison is not None else True
    lost_ids = {c.id for c in comparison.lost_hits} if comparison is not None else set()
    cases_path = results.inputs["cases"].path if "cases" in results.inputs else None

    suite_el = ET.Element("testsuite")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total = Decimal(0)
    for case in results.cases:
        counts["tests"] += 1
        test = ET.SubElement(suite_el, "testcase")
        _set(test, "name", case.id)
        _set(test, "classname", case_classname(suite=results.suite, case=case))
        if cases_path is not None and locations:
            _set(test, "file", cases_path)
        if case.line is not None and locations:
            test.set("line", str(case.line))
        if case.latency_ms is not None:
            test.set("time", _seconds(case.latency_ms))
            total += Decimal(_seconds(case.latency_ms))
        change = changes.get(case.id)
        query = f"query: {case.query}"
        if case.status == "failed":
            counts["errors"] += 1
            _outcome(test, "error", message=f"failed: {case.error or 'no result'}", kind="failed", detail=query)
        elif (change is not None and change.movement == "lost-hit") or case.id in lost_ids:
            counts["failures"] += 1
            message = (_lost_message(change, rankings=rankings) if change is not None
                       else "lost its hit (no ranking detail: see comparison.json)")
            _outcome(test, "failure", message=message, kind="lost-hit", detail=query)
        elif case.status == "no_gold" and not case.scores:
            counts["skipped"] += 1
            _outcome(test, "skipped", message="no gold: this case is not scored (a no-answer case without a score "
                                              "threshold)", kind=None, detail=query)
        elif change is not None and change.movement == "worse":
            out = ET.SubElement(test, "system-out")
            out.text = xml_text(f"got worse without losing its hit: {change_line(change, rankings=rankings).text}")
    if comparison is not None and comparison.verdict == "fail":
        counts["tests"] += 1
        counts["failures"] += 1
        gate = ET.SubElement(suite_el, "testcase")
        gate.set("name", "gate")
        _set(gate, "classname", f"{results.suite}.gate")
        gate_file = config_file if config_file is not None else cases_path
        if gate_file is not None and locations:
            _set(gate, "file", gate_file)
        rules, hints = gate_reasons(comparison)
        _outcome(gate, "failure", message="; ".join(rules) or "the gate failed", kind="gate",
                 detail="\n".join(hints))
    if comparison is not None and comparison.verdict == "needs-labels":
        counts["tests"] += 1
        gate = ET.SubElement(suite_el, "testcase")
        gate.set("name", "gate")
        _set(gate, "classname", f"{results.suite}.gate")
        # needs-labels: a failure unless gate.unjudged: warn (then a skipped test: no verdict either way)
        if gate_fails(comparison):
            counts["failures"] += 1
            _outcome(gate, "failure", message=needs_labels_words(comparison), kind="needs-labels",
                     detail=DECISIVE_TOP_UP_COMMAND)
        else:
            counts["skipped"] += 1
            _outcome(gate, "skipped", message=needs_labels_words(comparison), kind="needs-labels",
                     detail=DECISIVE_TOP_UP_COMMAND)
    _set(suite_el, "name", results.suite)
    for key, value in counts.items():
        suite_el.set(key, str(value))
    suite_el.set("time", f"{total:.3f}")
    root = ET.Element("testsuites")
    root.append(suite_el)
    for key, value in counts.items():
        if key != "skipped" or schema != "jenkins":
            root.set(key, str(value))
    root.set("time", f"{total:.3f}")
    _set(root, "name", "retrieval-gate")
    ET.indent(root)
    # ElementTree writes a CR in text as it is, and any parser reads it back as a LF (XML 1.0 §2.11):
    # as a reference it stays a CR. Every CR in the serialised document is in text (attributes
    # already escape theirs, the indentation is LF only).
    body = ET.tostring(root, encoding="unicode").replace("\r", "&#13;")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
