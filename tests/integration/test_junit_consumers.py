"""``report --format junit`` read by real consumers of JUnit XML: GitLab's parser (emulated
independently with xml.etree, as its ``Hash.from_xml`` reads an element), junitparser, junit2html,
Jenkins' xunit XSD (``--junit-schema jenkins``, validated with xmlschema) and, from npm
(``tests/consumers``, installed by ``.ci/run``), junit-to-ctrf, junit-report-merger and
xunit-viewer.

One merge request, built with the real CLI: two gold cards edited in the KB and both cases lost
their hit (so the gate's first failure line is the stale-labels hint, not a rule), one case missing
from the run, one no-gold case skipped, the gate failing on a floor set in retrieval-gate.yml, and
a query carrying a bidi override, C1 controls and a CR. The expected counts and texts are worked
out from how the runs were built, not read back from the renderer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from junit2htmlreport.parser import Junit
from junitparser import Error, Failure, JUnitXml, Skipped

from retrieval_gate.cli import main

ROOT = Path(__file__).resolve().parents[2]
XSD = ROOT / "tests" / "data" / "junit" / "junit-10.xsd"
NPM_BIN = ROOT / "tests" / "consumers" / "node_modules" / ".bin"

CARDS = [f"card-{i:02d}" for i in range(20)]
GOLD = {f"q{i:02d}": [f"card-{i:02d}"] for i in range(7)} | {"q07": []}
HOSTILE = "rtl \u202eevil\u202c c1 \x85 csi \x9b31m cr\rhere"
EDITED = ("card-01", "card-02")
LATENCY_MS = {"q00": 12.0, "q01": 250.4, "q02": 1000.0}  # the run's measured latencies (the rest: none)
# Worked out: 8 cases + the gate; q01, q02 lost (edited gold cards), gate fails; q04 missing: an
# error; q07 no gold: skipped; q00, q03, q05, q06 pass. Time: 0.012 + 0.250 + 1.000.
TESTS, FAILURES, ERRORS, SKIPPED, PASSED = 9, 3, 1, 1, 4
TOTAL_TIME = "1.262"
RULE = "hit@5 on overall: 0.571 is below the floor 0.95 (n=7)"  # 4 of the 7 scored cases keep their hit
HINT = "2 gold cards of lost cases were edited by this PR (card-01, card-02)"
SHOWN_QUERY = "rtl \\u202eevil\\u202c c1 \\x85 csi \\x9b31m cr\rhere"  # controls visible, the CR kept


def _cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    return int(info.value.code or 0)


def _write_kb(folder: Path, *, edited: tuple[str, ...]) -> None:
    (folder / "kb.jsonl").write_text("".join(
        json.dumps({"id": c, "title": c, "text": f"text of {c}" + (" (edited)" if c in edited else "")}) + "\n"
        for c in CARDS), encoding="utf-8")


def _write_run(path: Path, *, lost: tuple[str, ...], leave_out: tuple[str, ...]) -> None:
    lines = []
    for case_id, gold in GOLD.items():
        if case_id in leave_out:
            continue
        ranked = [c for c in CARDS if c not in gold][:10]
        if gold and case_id not in lost:
            ranked.insert(0, gold[0])
        lines.append(json.dumps({"id": case_id, "retrieved": ranked[:10],
                                 "scores": [round(1 - r / 20, 3) for r in range(10)]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``junit.xml`` (default) and ``jenkins.xml`` (``--junit-schema jenkins``) of the merge request,
    written from its folder (so the gate's file is ``retrieval-gate.yml``, relative)."""
    folder = tmp_path_factory.mktemp("mr")
    (folder / "cases.jsonl").write_text("".join(
        json.dumps({"id": cid, "query": HOSTILE if cid == "q01" else f"question {cid}", "gold": gold,
                    "locale": "en-US" if i % 2 else "pt-BR"}) + "\n"
        for i, (cid, gold) in enumerate(GOLD.items())), encoding="utf-8")
    (folder / "retrieval-gate.yml").write_text('suites:\n  default:\n    gate:\n      floors: {"hit@5": 0.95}\n',
                                               encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        _write_kb(folder, edited=())
        _write_run(folder / "base.jsonl", lost=(), leave_out=())
        score = ["score", "--cases", "cases.jsonl", "--kb", "kb.jsonl", "--k", "1,5,10", "--run"]
        assert _cli([*score, "base.jsonl", "--out", "base-results.json"]) == 0
        assert _cli(["baseline", "update", "--results", "base-results.json", "--baseline", "baseline.json"]) == 0
        _write_kb(folder, edited=EDITED)
        _write_run(folder / "pr.jsonl", lost=("q01", "q02"), leave_out=("q04",))
        assert _cli([*score, "pr.jsonl", "--out", "pr-results.json"]) == 0
        results = json.loads((folder / "pr-results.json").read_text(encoding="utf-8"))
        for case in results["cases"]:  # as eval measures them (score of a run file has none)
            if case["id"] in LATENCY_MS:
                case["latency_ms"] = LATENCY_MS[case["id"]]
        (folder / "pr-results.json").write_text(json.dumps(results), encoding="utf-8")
        assert _cli(["compare", "--results", "pr-results.json", "--baseline", "baseline.json",
                     "--out", "comparison.json"]) == 1
        report = ["report", "--results", "pr-results.json", "--comparison", "comparison.json", "--format", "junit"]
        assert _cli([*report, "--out", "junit.xml"]) == 0
        assert _cli([*report, "--junit-schema", "jenkins", "--out", "jenkins.xml"]) == 0
    return {"default": folder / "junit.xml", "jenkins": folder / "jenkins.xml", "folder": folder}


def _npm_tool(name: str) -> Path:
    """The npm consumer's executable, or a skip (a failure under CI, where .ci/run installs them)."""
    path = NPM_BIN / name
    if not path.exists() or shutil.which("node") is None:
        reason = f"{name} is not installed (npm ci --prefix tests/consumers; .ci/run does it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the JUnit consumer tests cannot run under CI: {reason}", pytrace=False)
        pytest.skip(reason)
    return path


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


# --- GitLab: Gitlab::Ci::Parsers::Test::Junit reads Hash.from_xml(xml) -------------------------

def _from_xml(element: ET.Element) -> object:
    """An element as ActiveSupport's ``Hash.from_xml`` gives it to GitLab's parser (the part it
    reads): children → a hash; no children and non-blank text → the text (the attributes are
    dropped); no text → a hash of the attributes — what GitLab then shows as a Ruby hash dump."""
    children = list(element)
    if children:
        out: dict[str, object] = dict(element.attrib)
        for child in children:
            out[child.tag.replace("-", "_")] = _from_xml(child)
        return out
    if element.text is not None and element.text.strip():
        return element.text
    return dict(element.attrib) or None


def _gitlab_cases(path: Path) -> dict[str, dict[str, object]]:
    """GitLab's ``create_test_case`` for every testcase: status, system_output, file, execution_time."""
    cases = {}
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for test in suite.iter("testcase"):
            data = _from_xml(test)
            assert isinstance(data, dict)
            status, output = "success", None
            for key, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                if key in data:
                    status, output = name, data[key]
                    break
            cases[str(data["name"])] = {"status": status, "system_output": output, "file": data.get("file"),
                                        "execution_time": data.get("time")}
    return cases


def test_the_gitlab_emulation_shows_an_attribute_only_reason_as_a_hash() -> None:
    """The emulation can fail: a skip with its reason only in the attribute reads as a hash."""
    root = ET.fromstring('<testsuites><testsuite name="s"><testcase name="a"><skipped message="why"/></testcase>'
                         '</testsuite></testsuites>')
    assert _from_xml(root.find("testsuite/testcase/skipped")) == {"message": "why"}  # type: ignore[arg-type]


def test_gitlab_shows_every_reason_and_the_failed_rule(reports: dict[str, Path]) -> None:
    cases = _gitlab_cases(reports["default"])
    assert list(cases) == [*GOLD, "gate"]
    statuses = [c["status"] for c in cases.values()]
    assert (statuses.count("failed"), statuses.count("error"), statuses.count("skipped")) == (FAILURES, ERRORS,
                                                                                              SKIPPED)
    for name, case in cases.items():
        if case["status"] != "success":
            assert isinstance(case["system_output"], str), (name, case["system_output"])  # text, not a hash
    assert str(cases["q04"]["system_output"]).startswith("failed: missing from the run")
    assert str(cases["q07"]["system_output"]).startswith("no gold: this case is not scored")
    gate_text = str(cases["gate"]["system_output"])
    assert gate_text.startswith(RULE) and HINT in gate_text
    assert cases["gate"]["file"] == "retrieval-gate.yml" and cases["q01"]["file"] == "cases.jsonl"
    assert f"query: {SHOWN_QUERY}" in str(cases["q01"]["system_output"])  # the CR survived the parser
    assert cases["q01"]["execution_time"] == "0.250"


def test_junitparser_counts_messages_and_times(reports: dict[str, Path]) -> None:
    xml = JUnitXml.fromfile(str(reports["default"]))
    suite = next(iter(xml))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (TESTS, FAILURES, ERRORS, SKIPPED)
    assert f"{suite.time:.3f}" == TOTAL_TIME and f"{xml.time:.3f}" == TOTAL_TIME
    cases = {c.name: c for c in suite}
    gate = cases["gate"].result[0]
    assert isinstance(gate, Failure) and gate.message == RULE  # the rule, not the hint
    assert HINT in (gate.text or "")
    assert isinstance(cases["q04"].result[0], Error) and cases["q04"].result[0].text.startswith("failed:")
    assert isinstance(cases["q07"].result[0], Skipped) and cases["q07"].result[0].text.startswith("no gold:")
    lost = cases["q01"].result[0]
    assert "gold card-01 1 → —" in lost.message and "cause: gold card edited in this PR" in lost.message
    assert lost.text.endswith(f"query: {SHOWN_QUERY}")


def test_the_jenkins_file_is_valid_against_the_xunit_plugins_xsd(reports: dict[str, Path]) -> None:
    schema = xmlschema.XMLSchema(str(XSD))
    schema.validate(str(reports["jenkins"]))
    reasons = sorted({e.reason or "" for e in schema.iter_errors(str(reports["default"]))})
    assert reasons == ["'file' attribute not allowed for element", "'line' attribute not allowed for element",
                       "'skipped' attribute not allowed for element"]  # why the default file is not for Jenkins
    suite = next(iter(JUnitXml.fromfile(str(reports["jenkins"]))))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (TESTS, FAILURES, ERRORS, SKIPPED)
    assert next(c for c in suite if c.name == "gate").result[0].message == RULE  # Jenkins' "Error Message"


def test_junit2html_reads_the_outcomes_and_reasons(reports: dict[str, Path], tmp_path: Path) -> None:
    cases = {c.name: c for s in Junit(filename=str(reports["default"])).suites for c in s.all()}
    assert sorted(cases) == sorted([*GOLD, "gate"])  # grouped by classname
    outcomes = [c.outcome() for c in cases.values()]
    assert (outcomes.count("failed"), outcomes.count("skipped"), outcomes.count("passed")) == (FAILURES + ERRORS,
                                                                                               SKIPPED, PASSED)
    assert cases["gate"].failure_msg == RULE
    assert cases["q07"].skipped_msg.startswith("no gold:")
    html = tmp_path / "report.html"
    _run(["junit2html", reports["default"], html], cwd=tmp_path)
    assert "below the floor 0.95" in html.read_text(encoding="utf-8")


def test_junit_to_ctrf_counts_and_messages(reports: dict[str, Path], tmp_path: Path) -> None:
    tool = _npm_tool("junit-to-ctrf")
    _run([tool, reports["default"], "-o", tmp_path / "ctrf.json"], cwd=tmp_path)
    ctrf = json.loads((tmp_path / "ctrf.json").read_text(encoding="utf-8"))["results"]
    summary = ctrf["summary"]
    assert (summary["tests"], summary["failed"], summary["skipped"], summary["passed"]) == (TESTS, FAILURES + ERRORS,
                                                                                          SKIPPED, PASSED)
    tests = {t["name"]: t for t in ctrf["tests"]}
    assert tests["default: gate"]["message"] == RULE
    assert tests["default: q04"]["message"] == "failed: missing from the run"
    assert tests["default: q01"]["duration"] == 250
    assert tests["default: q01"]["trace"].endswith(f"query: {SHOWN_QUERY}")


def test_junit_report_merger_adds_up_two_reports(reports: dict[str, Path], tmp_path: Path) -> None:
    tool = _npm_tool("jrm")
    merged = tmp_path / "merged.xml"
    _run([tool, merged, reports["default"], reports["jenkins"]], cwd=tmp_path)
    root = ET.parse(merged).getroot()
    assert [root.get(k) for k in ("tests", "failures", "errors", "skipped")] == [str(2 * n) for n in (
        TESTS, FAILURES, ERRORS, SKIPPED)]
    gates = [t.find("failure") for t in root.iter("testcase") if t.get("name") == "gate"]
    assert [g.get("message") for g in gates if g is not None] == [RULE, RULE]


def test_xunit_viewer_shows_counts_and_reasons(reports: dict[str, Path], tmp_path: Path) -> None:
    tool = _npm_tool("xunit-viewer")
    done = _run([tool, "-r", reports["default"], "-o", tmp_path / "viewer.html", "-c", "-n"], cwd=tmp_path)
    assert f"{PASSED} passed, {FAILURES} failure, {ERRORS} error, {SKIPPED} skipped" in done.stdout
    assert RULE in done.stdout and "failed: missing from the run" in done.stdout
    assert "no gold: this case is not scored" in done.stdout
    assert (tmp_path / "viewer.html").stat().st_size > 0
