"""``init``'s pure part: detection from a file listing, the per-file decisions (never destructive),
the texts it writes (valid YAML; the caller ≤ 15 lines; the docs show the same blocks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from retrieval_gate.errors import UsageError
from retrieval_gate.scaffold import texts
from retrieval_gate.scaffold.detect import choose, detect
from retrieval_gate.scaffold.plan import (
    APPEND,
    CREATE,
    KEEP,
    REPLACE,
    SAME,
    commit_commands,
    decide,
    gitignore_step,
    parse_action_ref,
    plan,
)

REPO = Path(__file__).resolve().parents[2]
SHA = "ab" * 20
PIN = {"repo": "<owner>/retrieval-gate", "sha": "<sha>", "version": "vX.Y.Z"}


def test_detects_a_markdown_folder_and_jsonl_cases():
    found = detect(["README.md", "kb/a.md", "kb/sub/b.md", "eval/cases.jsonl", "src/app.py"])
    assert [(f.path, f.kind) for f in found.kb] == [("kb", "a folder of 2 Markdown/text cards")]
    assert [f.path for f in found.cases] == ["eval/cases.jsonl"]
    assert choose(found.kb).path == "kb" and choose(found.cases).path == "eval/cases.jsonl"


def test_detects_a_beir_folder_as_both_kb_and_cases():
    found = detect(["data/scifact/corpus.jsonl", "data/scifact/queries.jsonl", "data/scifact/qrels/test.tsv"])
    assert [f.path for f in found.kb] == ["data/scifact"] and [f.path for f in found.cases] == ["data/scifact"]


def test_a_query_log_is_found_and_the_not_relevant_sidecar_is_no_golden_set():
    found = detect(["kb/a.md", "kb/b.md", "logs/search_queries.txt", "data/scifact/corpus.jsonl",
                    "data/scifact/queries.jsonl", "data/scifact/qrels.tsv", "kb/queries.md", "notes.txt"])
    assert [f.path for f in found.logs] == ["logs/search_queries.txt"]  # BEIR's queries.jsonl is no log
    found = detect(["kb/a.md", "kb/b.md", "cases.jsonl", "cases.not-relevant.jsonl"])
    assert [f.path for f in found.cases] == ["cases.jsonl"] and found.logs == []


def test_jsonl_kb_and_golden_names():
    found = detect(["data/kb.jsonl", "data/golden_set.jsonl"])
    assert [f.path for f in found.kb] == ["data/kb.jsonl"]
    assert [f.path for f in found.cases] == ["data/golden_set.jsonl"]


def test_a_single_readme_is_not_a_kb_and_two_equal_candidates_are_ambiguous():
    assert detect(["docs/README.md", "kb/only.md"]).kb == []
    found = detect(["a/cases.jsonl", "b/cases.jsonl"])
    assert choose(found.cases) is None and choose([]) is None
    # a kb/ folder is preferred to docs/ (project documentation, often)
    found = detect(["docs/x.md", "docs/y.md", "kb/a.md", "kb/b.md"])
    assert choose(found.kb).path == "kb"


def test_decide_never_replaces_other_content_without_force():
    assert decide(path="f", wanted="a", existing=None, force=False).action == CREATE
    assert decide(path="f", wanted="a", existing="a", force=False).action == SAME
    kept = decide(path="f", wanted="a", existing="mine", force=False)
    assert kept.action == KEEP and kept.text == "mine" and "--force" in kept.why
    assert decide(path="f", wanted="a", existing="mine", force=True).action == REPLACE


def test_gitignore_lines_are_appended_never_removed():
    step = gitignore_step("node_modules/\n/out\n")
    assert step.action == APPEND
    assert step.text.startswith("node_modules/\n/out\n\n# retrieval-gate")
    assert step.text.endswith(".retrieval-gate/\nretrieval-gate-out/\nsite/\n") and "\nout/\n" not in step.text
    assert gitignore_step(step.text).action == SAME
    assert gitignore_step(None).action == CREATE


def test_action_ref_must_be_a_full_commit_sha():
    assert parse_action_ref(f"acme/retrieval-gate@{SHA}", version="v1.0.0").sha == SHA
    for bad in ("acme/retrieval-gate@v1", "acme/retrieval-gate", f"retrieval-gate@{SHA}", f"a/b@{SHA[:-1]}"):
        with pytest.raises(UsageError, match="40-hex"):
            parse_action_ref(bad, version="v1.0.0")


def test_plan_without_a_pin_writes_no_workflow():
    steps = plan(suite="default", kb="kb", kb_kind="k", cases="c.jsonl", cases_kind="c", k=None, pin=None,
                 branch="main", existing={}, force=False)
    assert [s.path for s in steps] == ["retrieval-gate.yml", ".gitignore"]


def test_config_has_only_the_keys_that_differ_from_the_defaults_each_commented():
    text = texts.config_text(suite="default", kb="docs/kb", kb_kind="a folder", cases="eval/cases.jsonl",
                             cases_kind="JSONL cases", k=None)
    assert yaml.safe_load(text) == {"suites": {"default": {"kb": "docs/kb", "cases": "eval/cases.jsonl"}}}
    assert all("#" in line for line in text.splitlines() if line.startswith("    "))
    odd = texts.config_text(suite="my suite", kb="kb: x", kb_kind="a", cases="-c.jsonl", cases_kind="b", k=[1, 10])
    assert yaml.safe_load(odd) == {"suites": {"my suite": {"kb": "kb: x", "cases": "-c.jsonl", "k": [1, 10]}}}


def _yaml_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def test_the_callers_workflow_is_at_most_15_lines_and_pins_by_sha():
    for suite in ("default", "nightly"):
        text = texts.caller_workflow(repo="acme/retrieval-gate", sha=SHA, version="v1.2.3", branch="main", suite=suite)
        assert _yaml_lines(text) <= 15
        wf = yaml.safe_load(text)
        (job,) = wf["jobs"].values()
        assert job["uses"] == f"acme/retrieval-gate/.github/workflows/gate.yml@{SHA}"
        assert f"@{SHA}  # v1.2.3" in text
        assert wf["permissions"] == {} and job["permissions"] == {"contents": "write", "pull-requests": "write"}
        assert job.get("with", {}).get("suite", "default") == suite
    comment = yaml.safe_load(texts.comment_workflow(repo="acme/retrieval-gate", sha=SHA, version="v1.2.3"))
    steps = comment["jobs"]["comment"]["steps"]
    assert steps[-1]["uses"] == f"acme/retrieval-gate@{SHA}" and steps[-1]["with"]["mode"] == "comment"
    assert steps[0]["with"] == {"persist-credentials": False}


def _blocks(doc: Path) -> list[str]:
    return re.findall(r"^```ya?ml\n(.*?)^```", doc.read_text(encoding="utf-8"), re.M | re.S)


def test_the_docs_show_exactly_what_init_writes():
    caller = "# .github/workflows/retrieval.yml\n" + texts.caller_workflow(**PIN, branch="main", suite="default")
    comment = "# .github/workflows/retrieval-comment.yml\n" + texts.comment_workflow(**PIN)
    action_md = _blocks(REPO / "docs" / "action.md")
    assert caller in action_md and comment in action_md
    # the quick start shows exactly one block, and the README the same one
    section = (REPO / "docs" / "action.md").read_text(encoding="utf-8").split("## Quick start\n")[1].split("\n## ")[0]
    assert section.count("```yaml") == 1
    assert caller in _blocks(REPO / "README.md")


def test_commit_commands():
    assert commit_commands(["retrieval-gate.yml", "it's.yml"]) == [
        "git add retrieval-gate.yml 'it'\\''s.yml'", 'git commit -m "Measure retrieval with retrieval-gate"',
        "git push"]
