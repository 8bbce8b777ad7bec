"""The golden-set audit in the action, end to end against the fake GitHub API over real HTTP: a
refresh writes ``baselines/<suite>.audit.json`` beside the baseline (and nothing when it is
unchanged); a pull request's comment lists only the findings it introduced, against the base's
audit read at the base sha — never the PR's own copy, never with the PR's audit settings. The
eval is the fake engine (fast); the audit is the real one over this repository's example suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval_gate.artifacts.run_files import parse_audit
from retrieval_gate.settings import SuiteConfig
from tests.e2e.action_harness import REPO, ActionWorld
from tests.e2e.fake_engine import FakeEngine
from tests.e2e.fake_github import FakeGitHub

BASELINE = "baselines/default.json"
AUDIT = "baselines/default.audit.json"
CONFIG = "retrieval-gate.yml"
CONFIG_TEXT = """suites:
  default:
    kb: examples/kb
    cases: examples/cases.jsonl
    k: [1, 3, 5, 10]
    audit:
      coverage: [kind, locale, gold.category]
"""
MERGE, NEXT_MERGE = "a" * 40, "d" * 40
NO_BASE_AUDIT = "no base audit yet: it is written on the next baseline refresh"
# A card nobody labels, copied under a new id: one near-duplicate cluster, no gold touched.
TWIN_SOURCE, TWIN = "examples/kb/en-US/invoicing-templates.md", "en-invoicing-templates-copy"
# A case whose query is a sentence of its gold card, word for word.
LEAKED_CASE = {"id": "en-leak", "kind": "golden", "locale": "en-US", "gold": ["en-account-delete"],
               "query": "Closing your account deletes your workspace and the personal data in it."}


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(real_audit=True)


@pytest.fixture
def repo(world: ActionWorld) -> Path:
    """The checkout: this repository's example suite and a config naming it."""
    shutil.copytree(REPO / "examples" / "kb", world.workspace / "examples" / "kb")
    shutil.copy(REPO / "examples" / "cases.jsonl", world.workspace / "examples" / "cases.jsonl")
    (world.workspace / CONFIG).write_text(CONFIG_TEXT, encoding="utf-8")
    return world.workspace


def _push(world: ActionWorld, *, sha: str = MERGE, inputs: dict[str, str] | None = None):
    return world.run(event_name="push", event=world.push_event(ref="refs/heads/main"), ref="refs/heads/main",
                     sha=sha, inputs={"config": CONFIG, **(inputs or {})})


def _pr(world: ActionWorld, base_sha: str, *, inputs: dict[str, str] | None = None):
    return world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base_sha), ref="refs/pull/7/merge",
                     sha="c" * 40, inputs={"config": CONFIG, **(inputs or {})})


def _refreshed_base(world: ActionWorld, github: FakeGitHub) -> str:
    """The default branch after a merge's refresh: config, baseline and audit, written by the action."""
    github.commit("main", {CONFIG: CONFIG_TEXT}, message="config")
    assert _push(world).exit_code == 0
    assert github.file_at("main", AUDIT) is not None
    return github.branches["main"]


def _add_twin(checkout: Path) -> None:
    text = (checkout / TWIN_SOURCE).read_text(encoding="utf-8").replace("id: en-invoicing-templates\n",
                                                                         f"id: {TWIN}\n", 1)
    assert f"id: {TWIN}\n" in text
    (checkout / "examples" / "kb" / "en-US" / "invoicing-templates-copy.md").write_text(text, encoding="utf-8")


def _add_leak(checkout: Path) -> None:
    with (checkout / "examples" / "cases.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(LEAKED_CASE) + "\n")


def _comment(github: FakeGitHub) -> str:
    (comment,) = github.comments[7]
    return str(comment["body"])


def _audit_rows(body: str) -> list[list[str]]:
    """The rows of the comment's audit table: severity, kind, cases / cell, cards, reason."""
    section = body.split("Golden-set audit", 1)[1].split("</details>", 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| severity")]


def test_a_refresh_writes_the_audit_beside_the_baseline_and_an_unchanged_one_writes_nothing(world, github, repo):
    github.commit("main", {CONFIG: CONFIG_TEXT}, message="config")
    first = _push(world)
    assert first.exit_code == 0
    written = github.file_at("main", AUDIT)
    assert written is not None and github.file_at("main", BASELINE) is not None
    (commit,) = github.requests("POST", "/git/commits$")  # one commit: the baseline and its audit
    assert commit.body["message"] == f"retrieval-gate: update {BASELINE} and {AUDIT} for {MERGE[:12]} [skip ci]"
    assert first.outputs["audit_commit"] == first.outputs["baseline_commit"] == github.branches["main"]
    assert (world.workspace / first.outputs["audit_file"]).read_text(encoding="utf-8") == written
    # The committed golden file of the examples (made by `retrieval-gate audit`) has the same findings.
    golden = json.loads((REPO / "examples" / "audit.json").read_text(encoding="utf-8"))
    report = parse_audit(written.encode(), source=Path(AUDIT))
    assert [f.model_dump(mode="json") for f in report.findings] == golden["findings"]
    assert f"Audit `{AUDIT}` ({len(golden['findings'])} findings) written in the same commit" in first.summary

    second = _push(world, sha=NEXT_MERGE)  # another merge, same KB and cases: a new baseline entry only
    assert second.exit_code == 0
    last = github.requests("POST", "/git/commits$")[-1]
    assert last.body["message"] == f"retrieval-gate: update {BASELINE} for {NEXT_MERGE[:12]} [skip ci]"
    assert second.outputs["audit_commit"] == "" and github.file_at("main", AUDIT) == written
    assert f"Audit `{AUDIT}` unchanged; nothing written for it." in second.summary


@pytest.mark.parametrize(("change", "kind", "cases", "cards"), [
    (_add_twin, "near_duplicate_cards", "", f"en-invoicing-templates, {TWIN}"),
    (_add_leak, "query_leakage", "en-leak", "en-account-delete"),
], ids=["near-duplicate-card", "leaked-query"])
def test_a_pr_comment_lists_exactly_the_finding_the_pr_introduced(world, github, repo, change, kind, cases, cards):
    base = _refreshed_base(world, github)
    base_findings = len(json.loads(github.file_at(base, AUDIT) or "")["findings"])
    assert base_findings > 0  # the example suite's coverage findings: none of them is new
    change(repo)
    run = _pr(world, base)
    assert run.exit_code == 0
    body = _comment(github)
    assert "1 new finding in this PR" in body
    ((severity, got_kind, got_cases, got_cards, reason),) = _audit_rows(body)
    assert (got_kind, got_cases, got_cards) == (kind, cases, cards)
    assert severity in ("low", "medium") and reason
    assert "underpowered_cell" not in body and "empty_coverage_cell" not in body
    assert run.outputs["audit_file"] and "Golden-set audit" in run.summary
    read = github.requests("GET", f"/contents/{AUDIT}$")[-1]
    assert read.query["ref"] == [base]


def test_a_pr_that_rewrites_its_own_audit_file_or_audit_settings_hides_nothing(world, github, repo):
    base = _refreshed_base(world, github)
    _add_leak(repo)
    # The PR's checkout claims the leak was already there, and loosens its audit settings.
    tampered = json.loads(github.file_at(base, AUDIT) or "")
    tampered["findings"] = []
    (repo / "baselines").mkdir()
    (repo / AUDIT).write_text(json.dumps(tampered), encoding="utf-8")
    (repo / CONFIG).write_text(CONFIG_TEXT + "      leak_min_words: 50\n      threshold: 0.05\n", encoding="utf-8")
    run = _pr(world, base)
    assert run.exit_code == 0
    rows = _audit_rows(_comment(github))
    assert [(r[1], r[2]) for r in rows] == [("query_leakage", "en-leak")]  # base settings: no 0.05 clusters
    assert "audit settings: this PR changes the suite's audit section" in run.stdout


def test_without_a_base_audit_the_section_is_one_line(world, github, repo):
    base = github.commit("main", {CONFIG: CONFIG_TEXT}, message="a repository refreshed before the audit existed")
    run = _pr(world, base)
    assert run.exit_code == 0
    body = _comment(github)
    assert NO_BASE_AUDIT in body and "<details><summary>🧪" not in body
    findings = len(json.loads((repo / run.outputs["audit_file"]).read_text(encoding="utf-8"))["findings"])
    assert f"this PR's audit has {findings} findings" in body


def test_a_base_audit_that_does_not_parse_is_a_note_not_a_failure(world, github, repo):
    base = _refreshed_base(world, github)
    broken = github.commit("main", {AUDIT: '{"schema_version": 1, "findings": "nope"}'}, message="hand edit")
    run = _pr(world, broken, inputs={"fail_on_regression": "true"})
    assert run.exit_code == 0 and base != broken
    body = _comment(github)
    assert "the base audit does not parse" in body and f"{AUDIT}@{broken[:12]}" in body
    assert "not an audit file" in body


def test_audit_false_runs_no_audit_and_shows_no_section(world, github, repo, engine):
    base = _refreshed_base(world, github)
    audits = len(engine.audits)
    _add_leak(repo)
    run = _pr(world, base, inputs={"audit": "false"})
    assert run.exit_code == 0
    assert len(engine.audits) == audits and run.outputs["audit_file"] == ""
    assert "Golden-set audit" not in _comment(github) and "Golden-set audit" not in run.summary
    reads = github.requests("GET", f"/contents/{AUDIT}$")
    assert all(r.query["ref"] != [base] for r in reads)  # only the refresh read it, on main
    assert "audit: off (input audit=false)" in run.stdout

    refresh = _push(world, sha=NEXT_MERGE, inputs={"audit": "false"})
    assert refresh.exit_code == 0 and refresh.outputs["audit_file"] == refresh.outputs["audit_commit"] == ""
    assert github.requests("POST", "/git/commits$")[-1].body["message"] == (
        f"retrieval-gate: update {BASELINE} for {NEXT_MERGE[:12]} [skip ci]")
    assert len(engine.audits) == audits


def test_a_write_baseline_job_without_the_data_warns_and_still_writes_the_baseline(world, github, engine):
    results = FakeEngine().evaluate(suite_config=SuiteConfig(), suite="default")
    (world.workspace / "eval-out").mkdir()
    (world.workspace / "eval-out" / "results.json").write_text(json.dumps(results.to_json_data()), encoding="utf-8")
    (world.workspace / CONFIG).write_text(CONFIG_TEXT, encoding="utf-8")  # names examples/, not checked out here
    run = world.run(event_name="push", event=world.push_event(ref="refs/heads/main"), ref="refs/heads/main",
                    sha=MERGE, inputs={"config": CONFIG, "mode": "write-baseline",
                                       "results_file": "eval-out/results.json"})
    assert run.exit_code == 0 and github.file_at("main", BASELINE) is not None
    assert github.file_at("main", AUDIT) is None and run.outputs["audit_commit"] == run.outputs["audit_file"] == ""
    assert "::warning title=retrieval-gate%3A audit::the golden-set audit could not run" in run.stdout
    assert "The golden-set audit could not run" in run.summary


def test_a_pr_that_fixes_a_base_finding_is_counted_as_resolved(world, github, repo):
    _add_leak(repo)  # the default branch has the leaked case …
    base = _refreshed_base(world, github)
    lines = (repo / "examples" / "cases.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (repo / "examples" / "cases.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")  # … the PR removes it
    run = _pr(world, base)
    assert run.exit_code == 0
    body = _comment(github)
    assert "0 new findings in this PR · 1 resolved" in body and _audit_rows(body) == []


def test_a_base_audit_made_with_other_settings_is_flagged_in_the_section(world, github, repo):
    _refreshed_base(world, github)
    # the base's audit settings changed after its last refresh (no refresh since)
    base = github.commit("main", {CONFIG: CONFIG_TEXT + "      leak_min_words: 5\n"}, message="audit knobs")
    _add_leak(repo)
    run = _pr(world, base)
    assert run.exit_code == 0
    body = _comment(github)
    assert [(r[1], r[2]) for r in _audit_rows(body)] == [("query_leakage", "en-leak")]
    assert "the base audit was made with other settings than this PR's audit" in body
