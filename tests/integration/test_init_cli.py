"""``retrieval-gate init`` through the CLI on small repositories: what it writes, that a rerun
changes nothing and says what it kept, ``--force``, exit 2 (nothing written) when it cannot tell
or the data is wrong, and — with the real model — the first baseline, after which ``compare`` is
green."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import run_cli

SHA = "cd" * 20
REF = f"acme/retrieval-gate@{SHA}"
CARDS = {"refunds": "# Refunds\n\nA card refund shows up on the statement in 5 to 10 business days.\n",
         "password": "# Reset your password\n\nClick 'forgot password' on the login page.\n",
         "export": "# Export reports\n\nExport any report to CSV or PDF from the Reports page.\n"}
CASES = [{"id": "c1", "query": "When does a card refund appear?", "gold": ["refunds"]},
         {"id": "c2", "query": "I forgot my password", "gold": ["password"]},
         {"id": "c3", "query": "Export a report as CSV", "gold": ["export"]},
         {"id": "c4", "query": "What is the capital of France?", "gold": []}]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_cli(list(args), capsys)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(tmp_path)], check=True)
    (tmp_path / "kb").mkdir()
    for name, text in CARDS.items():
        (tmp_path / "kb" / f"{name}.md").write_text(text, encoding="utf-8")
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (tmp_path / ".gitignore").write_text("node_modules/\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_writes_config_workflows_and_gitignore_then_a_rerun_changes_nothing(repo, capsys):
    code, out, err = cli(capsys, "init", "--no-baseline", "--action-ref", REF)
    assert code == 0, err
    assert "found: kb (a folder of 3 Markdown/text cards, 3 cards) and eval/cases.jsonl" in out
    config = yaml.safe_load((repo / "retrieval-gate.yml").read_text(encoding="utf-8"))
    assert config == {"suites": {"default": {"kb": "kb", "cases": "eval/cases.jsonl"}}}
    caller = yaml.safe_load((repo / ".github/workflows/retrieval.yml").read_text(encoding="utf-8"))
    assert caller[True]["push"] == {"branches": ["trunk"]}  # the checked-out branch (YAML 1.1: on → True)
    assert caller["jobs"]["retrieval"]["uses"] == f"acme/retrieval-gate/.github/workflows/gate.yml@{SHA}"
    # a commit this build does not know gets no version label beside it
    text = (repo / ".github/workflows/retrieval.yml").read_text(encoding="utf-8")
    assert f"gate.yml@{SHA}\n" in text and "# v0" not in text
    assert (repo / ".github/workflows/retrieval-comment.yml").is_file()
    assert (repo / ".gitignore").read_text(encoding="utf-8").startswith("node_modules/\n")
    assert ".retrieval-gate/" in (repo / ".gitignore").read_text(encoding="utf-8")
    assert "\nsite/\n" in (repo / ".gitignore").read_text(encoding="utf-8")  # `history --out site`
    assert "git add retrieval-gate.yml .github/workflows/retrieval.yml" in out and "git push" in out
    # a phrase is never broken across lines (the console's width is not the message's)
    assert all(len(line) <= 400 for line in out.splitlines())
    assert "found: kb (a folder of 3 Markdown/text cards, 3 cards) and eval/cases.jsonl" in out

    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git/" not in p.as_posix()}
    code, out, _ = cli(capsys, "init", "--no-baseline", "--action-ref", REF)
    assert code == 0
    assert "unchanged retrieval-gate.yml" in out and "unchanged .gitignore" in out
    # written by the first run but never committed: "already there" is not "committed"
    assert "nothing to commit" not in out and "but not committed yet" in out
    assert "git add retrieval-gate.yml .github/workflows/retrieval.yml" in out
    assert {p: p.read_bytes() for p in before} == before
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit",
                    "-qm", "set up"], check=True)
    code, out, _ = cli(capsys, "init", "--no-baseline", "--action-ref", REF)
    assert code == 0 and "nothing to commit: every file was already there and is committed" in out


def test_init_keeps_a_file_it_did_not_write_unless_forced(repo, capsys):
    wf = repo / ".github" / "workflows"
    wf.mkdir(parents=True)
    (wf / "retrieval.yml").write_text("name: mine\n", encoding="utf-8")
    code, out, _ = cli(capsys, "init", "--no-baseline", "--action-ref", REF)
    assert code == 0 and "kept .github/workflows/retrieval.yml (exists with other content; --force" in out
    assert (wf / "retrieval.yml").read_text(encoding="utf-8") == "name: mine\n"
    code, out, _ = cli(capsys, "init", "--no-baseline", "--action-ref", REF, "--force")
    assert code == 0 and "replaced .github/workflows/retrieval.yml" in out
    assert "gate.yml@" in (wf / "retrieval.yml").read_text(encoding="utf-8")


def test_init_without_a_pin_writes_no_workflow_and_says_how(repo, capsys):
    code, _, err = cli(capsys, "init", "--no-baseline")
    assert code == 0
    assert "workflows: not written" in err and "--action-ref" in err
    assert not (repo / ".github").exists() and (repo / "retrieval-gate.yml").is_file()


def test_init_exits_2_and_writes_nothing_when_it_cannot_tell_or_the_gold_is_wrong(repo, capsys):
    (repo / "more").mkdir()
    (repo / "more" / "cases.jsonl").write_text((repo / "eval" / "cases.jsonl").read_text(), encoding="utf-8")
    code, _, err = cli(capsys, "init", "--no-baseline", "--action-ref", REF)
    assert code == 2 and "could not tell the golden set" in err
    assert "eval/cases.jsonl" in err and "more/cases.jsonl" in err and "--cases" in err
    bad = repo / "bad.jsonl"
    bad.write_text(json.dumps({"id": "c1", "query": "q", "gold": ["nope"]}) + "\n", encoding="utf-8")
    code, _, err = cli(capsys, "init", "--no-baseline", "--action-ref", REF, "--cases", str(bad))
    assert code == 2 and "nope" in err
    assert not (repo / "retrieval-gate.yml").exists()
    assert (repo / ".gitignore").read_text(encoding="utf-8") == "node_modules/\n"


@pytest.mark.model
def test_init_writes_the_first_baseline_and_compare_is_green(repo, capsys):
    code, out, err = cli(capsys, "init", "--action-ref", REF)
    assert code == 0, err
    baseline = json.loads((repo / "baselines" / "default.json").read_text(encoding="utf-8"))
    results = json.loads((repo / "out" / "results.json").read_text(encoding="utf-8"))
    assert sorted(baseline["cases"]) == ["c1", "c2", "c3", "c4"]
    scored = [c for c in results["cases"] if c["gold"]]
    hit1 = sum(1.0 for c in scored if c["retrieved"][:1] == c["gold"]) / len(scored)  # by hand
    assert baseline["aggregates"]["overall"]["hit@1"]["value"] == pytest.approx(hit1, abs=5e-7)
    audit = json.loads((repo / "baselines" / "default.audit.json").read_text(encoding="utf-8"))
    assert audit["counts"]["cases"] == 4
    assert "git add" in out and "baselines/default.json baselines/default.kb.json baselines/default.audit.json" in out
    # the KB manifest beside the first baseline: the first PR's causes can name edited cards
    manifest = json.loads((repo / "baselines" / "default.kb.json").read_text(encoding="utf-8"))
    assert sorted(manifest["cards"]) == ["export", "password", "refunds"]
    code, out, _ = cli(capsys, "compare", "--results", "out/results.json")
    assert code == 0 and "PASS" in out
    assert "baseline from a local run (no commit recorded)" in out and "(no commit)" not in out
    # report finds the same default baseline as compare: an identical rerun, not a first run
    code, out, _ = cli(capsys, "report", "--results", "out/results.json", "--format", "markdown")
    assert code == 0 and out.splitlines()[1] == "### ⚪ Retrieval · default · no case changed"
    # the first pull request: a page added, another edited — the KB is the PR's subject, shown as
    # cards; like-for-like (no setting changed)
    (repo / "kb" / "pricing.md").write_text("# Pricing\n\nPlans start at 10 dollars a month.\n", encoding="utf-8")
    (repo / "kb" / "export.md").write_text(CARDS["export"] + "\nExports keep your filters.\n", encoding="utf-8")
    code, _, err = cli(capsys, "eval", "--suite", "default", "--out", "out/pr.json")
    assert code == 0, err
    code, out, _ = cli(capsys, "compare", "--results", "out/pr.json", "--out", "out/pr.comparison.json")
    comparison = json.loads((repo / "out" / "pr.comparison.json").read_text(encoding="utf-8"))
    assert code == 0 and comparison["like_for_like"] and "not like-for-like" not in out
    assert [c["key"] for c in comparison["config_changes"]] == ["inputs.kb"]
    assert [e["card"] for e in comparison["kb_changes"]["added"]] == ["pricing"]
    assert [e["card"] for e in comparison["kb_changes"]["edited"]] == ["export"]
    code, out, _ = cli(capsys, "report", "--results", "out/pr.json", "--format", "markdown")
    assert code == 0 and "Not like-for-like" not in out
    assert 'The KB changed (1 card edited (export "Export reports"), 1 added (pricing "Pricing"), 0 removed)' in out
    code, out, _ = cli(capsys, "init", "--action-ref", REF)
    assert code == 0 and "kept baselines/default.json" in out and "but not committed yet" in out
    assert "baselines/default.json baselines/default.kb.json baselines/default.audit.json" in out


def test_write_release_pin_rewrites_a_copy_of_the_pin_module(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "src" / "retrieval_gate").mkdir(parents=True)
    repo = Path(__file__).resolve().parents[2]
    script = tmp_path / "scripts" / "write-release-pin"
    script.write_bytes((repo / "scripts" / "write-release-pin").read_bytes())
    script.chmod(0o755)
    module = tmp_path / "src" / "retrieval_gate" / "release_pin.py"
    module.write_text((repo / "src" / "retrieval_gate" / "release_pin.py").read_text(encoding="utf-8"),
                      encoding="utf-8")
    bad = subprocess.run([str(script), "acme/retrieval-gate@v1", "v1.2.3"], capture_output=True, text=True)
    assert bad.returncode == 2 and "not OWNER/REPO@SHA" in bad.stderr
    done = subprocess.run([str(script), REF, "v1.2.3"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    values: dict = {}
    exec(compile(module.read_text(encoding="utf-8"), str(module), "exec"), values)
    assert (values["ACTION_REF"], values["ACTION_VERSION"]) == (REF, "v1.2.3")


def test_a_released_build_pins_the_workflows_without_the_flag(repo, capsys, monkeypatch):
    from retrieval_gate import release_pin

    monkeypatch.setattr(release_pin, "ACTION_REF", REF)  # what write-release-pin bakes into the wheel
    monkeypatch.setattr(release_pin, "ACTION_VERSION", "v1.2.3")
    code, _, err = cli(capsys, "init", "--no-baseline")
    assert code == 0, err
    text = (repo / ".github/workflows/retrieval.yml").read_text(encoding="utf-8")
    assert f"uses: acme/retrieval-gate/.github/workflows/gate.yml@{SHA}  # v1.2.3" in text


IMAGE = "ghcr.io/acme/retrieval-gate:0.2.0@sha256:" + "ab" * 32


def test_init_ci_gitlab_writes_the_pipeline_and_no_github_workflow(repo, capsys):
    code, out, err = cli(capsys, "init", "--no-baseline", "--ci", "gitlab", "--image", IMAGE)
    assert code == 0, err
    jobs = yaml.safe_load((repo / ".gitlab-ci.yml").read_text(encoding="utf-8"))
    job = jobs["retrieval"]
    assert jobs["pages"]["needs"] == ["retrieval-refresh"] and jobs["pages"]["artifacts"]["paths"] == ["public"]
    assert job["image"]["name"] == IMAGE and job["script"] == ["retrieval-gate action"]
    assert job["artifacts"]["reports"]["junit"] == "retrieval-gate-out/junit.xml"
    assert job["cache"]["key"] == "retrieval-gate-store"  # a folder KB: one key; the store syncs what changed
    assert not (repo / ".github").exists()
    assert "git add retrieval-gate.yml .gitlab-ci.yml .gitignore" in out
    again = cli(capsys, "init", "--no-baseline", "--ci", "gitlab", "--image", IMAGE)
    assert again[0] == 0 and "unchanged .gitlab-ci.yml" in again[1]


def test_init_ci_gitlab_without_an_image_writes_no_pipeline_and_says_why(repo, capsys):
    code, _, err = cli(capsys, "init", "--no-baseline", "--ci", "gitlab")
    assert code == 0
    assert "gitlab pipeline: not written" in err and "--image" in err
    assert not (repo / ".gitlab-ci.yml").exists() and not (repo / ".github").exists()


@pytest.mark.parametrize("args", [["--ci", "jenkins"], ["--ci", "gitlab", "--image", "ghcr.io/acme/rg:latest"],
                                  ["--ci", "gitlab", "--image", "retrieval-gate@sha256:" + "ab" * 32],
                                  ["--image", IMAGE], ["--ci", "gitlab", "--image", IMAGE, "--action-ref", REF]])
def test_init_ci_mistakes_are_exit_2_and_write_nothing(repo, capsys, args):
    code, _, err = cli(capsys, "init", "--no-baseline", *args)
    assert code == 2, err
    assert not (repo / "retrieval-gate.yml").exists() and not (repo / ".gitlab-ci.yml").exists()


def test_init_says_which_image_the_suite_needs_in_one_line(repo, capsys):
    code, _, err = cli(capsys, "init", "--no-baseline", "--action-ref", REF)
    assert code == 0, err
    (line,) = [line for line in err.splitlines() if line.startswith("image: ")]
    assert line.startswith("image: the action's default (torch-free): ")
    (repo / "retrieval-gate.yml").write_text("suites:\n  default:\n    kb: kb\n    cases: eval/cases.jsonl\n"
                                             "    retriever: bm25+rerank\n", encoding="utf-8")
    code, _, err = cli(capsys, "init", "--no-baseline", "--action-ref", REF)
    assert code == 0, err
    (line,) = [line for line in err.splitlines() if line.startswith("image: ")]
    assert line.startswith("image: the full variant (with torch): bm25+rerank runs the cross-encoder rerank")
    assert "-full" in line
