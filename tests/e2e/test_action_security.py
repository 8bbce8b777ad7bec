"""The abuses the action must withstand, each as a run of the action against the fake GitHub API over HTTP:
a PR switching its own gate off, comment mode relaying what a fork's artifact points to, a
comment for a run without a head sha, a baseline written under events that act for someone
else, and secrets (the token, ACTIONS_* values) reaching what is posted or written."""

from __future__ import annotations

import json
import os

import pytest

from retrieval_gate.publish import fork_comment
from retrieval_gate.settings import SuiteConfig
from tests.e2e.action_harness import TOKEN, ActionWorld
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_github import FakeGitHub
from tests.e2e.test_action_pr import _comment_run, _fork_run_data

MARKER = "<!-- retrieval-gate:default -->"
BASELINE = "baselines/default.json"
ALL_HITS = {f"q{i}": 1.0 for i in range(20)}
HITS_60 = {f"q{i}": (1.0 if i < 12 else 0.0) for i in range(20)}  # hit@5 1.0 → 0.6: 8 of 20 lost, none gained
# (the exact one-sided sign test: p = 0.5⁸ ≈ 0.004 < alpha 0.05, so a gate that is on fails)
RUNTIME_TOKEN = "eyJhbGciOiJSUzI1NiJ9.runtime-token-VALUE-0123456789"
BASE_CONFIG = "suites:\n  default:\n    k: [1, 5]\n    gate:\n      fail_on_regression: true\n"
GATE_OFF_CONFIG = ("suites:\n  default:\n    k: [1, 5]\n    baseline: baselines/nope.json\n    gate:\n"
                   "      fail_on_regression: false\n      default_max_drop: 1.0\n")


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(scores=dict(HITS_60))


def _base(github: FakeGitHub, engine: FakeEngine, *, config: str | None = BASE_CONFIG) -> str:
    files = {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)}
    if config is not None:
        files["retrieval-gate.yml"] = config
    return github.commit("main", files, message="base")


def _pr(world: ActionWorld, base_sha: str, *, inputs: dict[str, str] | None = None,
        extra_env: dict[str, str] | None = None):
    return world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base_sha), inputs=inputs,
                     ref="refs/pull/7/merge", sha="c" * 40, extra_env=extra_env)


def _everything_written(world: ActionWorld, github: FakeGitHub) -> str:
    files = [p.read_text(encoding="utf-8", errors="replace") for p in world.workspace.rglob("*")
             if p.is_file() and not p.is_symlink() and "pr-artifact" not in p.parts]
    posted = [c["body"] for comments in github.comments.values() for c in comments]
    written = [json.dumps(r.body) for r in github.log if r.method in ("PUT", "POST", "PATCH")]
    return "\n".join(files + posted + written)


def _judged_gate(world: ActionWorld, run) -> dict:
    """The gate the comparison was judged with, as comparison.json records it."""
    return json.loads((world.workspace / run.outputs["comparison_path"]).read_text(encoding="utf-8"))["gate"]


# -- 1. a pull request cannot switch its own gate off ---------------------------------------------


def test_a_pr_that_switches_its_gate_off_is_judged_with_the_bases_gate(world, github, engine):
    base = _base(github, engine)
    (world.workspace / "retrieval-gate.yml").write_text(GATE_OFF_CONFIG, encoding="utf-8")

    run = _pr(world, base)

    assert run.exit_code == 1 and run.outputs["verdict"] == "fail"
    (read,) = github.requests("GET", "/contents/retrieval-gate.yml")
    assert read.query["ref"] == [base]  # the base's config, through the API
    assert run.outputs["baseline_path"] == BASELINE  # not the PR's baselines/nope.json
    gate = _judged_gate(world, run)
    assert gate["fail_on_regression"] is True and gate["default_max_drop"] == 0.02
    assert engine.configs[-1].k == (1, 5)  # eval settings still from the PR
    body = github.comments[7][0]["body"]
    assert body.startswith(MARKER + "\n> ⚠️ **This pull request changes the gate settings**")
    assert "the change applies after merge" in body
    for key, old, new in [("gate.fail_on_regression", "true", "false"),
                          ("gate.default_max_drop", "0.02", "1.0"),
                          ("baseline", "\"baselines/default.json\"", "\"baselines/nope.json\"")]:
        assert f"> | {key} | {old} | {new} |" in body
    assert "::warning title=retrieval-gate%3A gate settings changed::retrieval-gate.yml: this PR changes " \
           "gate.fail_on_regression: true → false" in run.stdout


def test_a_pr_that_deletes_the_config_is_still_judged_with_the_bases_gate(world, github, engine):
    base = _base(github, engine)
    run = _pr(world, base)  # the checkout has no retrieval-gate.yml
    assert run.exit_code == 1
    assert "> | gate.fail_on_regression | true | false |" in github.comments[7][0]["body"]


def test_an_unchanged_gate_gets_no_notice(world, github, engine):
    base = _base(github, engine)
    (world.workspace / "retrieval-gate.yml").write_text(BASE_CONFIG.replace("[1, 5]", "[1, 3, 5]"),
                                                        encoding="utf-8")
    run = _pr(world, base)
    assert run.exit_code == 1
    assert "changes the gate settings" not in github.comments[7][0]["body"]
    assert engine.configs[-1].k == (1, 3, 5)


def test_without_a_config_at_the_base_the_defaults_apply_and_the_prs_gate_is_listed(world, github, engine):
    base = _base(github, engine, config=None)
    (world.workspace / "retrieval-gate.yml").write_text(BASE_CONFIG, encoding="utf-8")
    run = _pr(world, base)
    assert run.exit_code == 0 and run.outputs["regressed"] == "true"  # default gate: off
    assert "> | gate.fail_on_regression | false | true |" in github.comments[7][0]["body"]


def test_a_dispatch_follows_the_gate_of_the_ref_it_compares_with(world, github, engine):
    base = _base(github, engine)
    github.commit("main", {"retrieval-gate.yml": GATE_OFF_CONFIG}, message="gate off later")
    (world.workspace / "retrieval-gate.yml").write_text(GATE_OFF_CONFIG, encoding="utf-8")
    run = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/heads/feature"),
                    inputs={"base_ref": base}, ref="refs/heads/feature")
    assert run.exit_code == 1 and _judged_gate(world, run)["fail_on_regression"] is True
    latest = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/heads/feature"),
                       ref="refs/heads/feature")  # the default branch now has the gate off
    assert latest.exit_code == 0 and latest.outputs["baseline_path"] == "baselines/nope.json"


def test_gate_on_and_an_unreadable_baseline_fails_clearly_not_as_a_first_run(world, github, engine):
    base = _base(github, engine)
    github.fail("GET", f"/contents/{BASELINE}$", status=403, body={"message": "Resource not accessible"})
    run = _pr(world, base)
    assert run.exit_code == 2
    assert f"cannot read the baseline {BASELINE}" in run.stderr
    assert "the gate is on, so this run fails rather than report a first run" in run.stderr
    assert "first run" not in run.stdout and github.comments.get(7) is None


def test_a_recursive_alias_in_the_bases_config_is_refused(world, github, engine):
    """Aliases are allowed in a config (capped: load/yamltext.py); a recursive one is refused, and
    the error names the base's copy."""
    base = _base(github, engine, config="suites:\n  default: {k: [1, 5]}\nloop: &x [1, *x]\n")
    run = _pr(world, base)
    assert run.exit_code == 2 and "retrieval-gate.yml@" in run.stderr and "recursive alias" in run.stderr


# -- 2. comment mode renders validated data, never follows a link ---------------------------------


def _secret_file(world: ActionWorld):
    secret = world.tmp / "runner-env"
    secret.write_text(f"INPUT_GITHUB_TOKEN={TOKEN}\n", encoding="utf-8")
    return secret


def test_comment_mode_never_relays_a_markdown_file(world, github, engine):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    (world.workspace / "pr-artifact").mkdir()
    os.symlink(_secret_file(world), world.workspace / "pr-artifact" / "comment.md")
    run = world.run(event_name="workflow_run", event={"workflow_run": {
        "id": 99, "head_sha": "1" * 40, "head_repository": {"full_name": "someone/rag"}}},
        inputs={"pr_number": "7", "comment_file": "pr-artifact/comment.md"})
    assert run.exit_code == 2 and "no longer posts a Markdown file" in run.stderr
    assert github.requests(path_regex="/comments") == [] and TOKEN not in run.everything()


@pytest.mark.parametrize("which", ["results_file", "comparison_file"])
def test_a_symlinked_artifact_file_posts_nothing(world, github, engine, which):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    _fork_run_data(world, engine)
    name = "results.json" if which == "results_file" else "comparison.json"
    target = world.workspace / "pr-artifact" / name
    target.unlink()
    os.symlink(_secret_file(world), target)
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 2 and f"{which}: refused, it is a symbolic link" in run.stderr
    assert github.requests(path_regex="/comments") == [] and TOKEN not in run.everything()


def test_an_artifact_file_under_a_folder_leading_out_of_the_workspace_is_refused(world, github, engine):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    outside = world.tmp / "outside"
    outside.mkdir()
    (outside / "results.json").write_text("{}", encoding="utf-8")
    os.symlink(outside, world.workspace / "pr-artifact")
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 2 and "resolves outside the workspace" in run.stderr
    assert github.requests(path_regex="/comments") == []


def test_an_artifact_file_over_its_cap_is_refused(world, github, engine, monkeypatch):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    _fork_run_data(world, engine)
    monkeypatch.setattr(fork_comment, "RESULTS_MAX_BYTES", 100)
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 2 and "over the 100 byte cap" in run.stderr
    assert github.requests(path_regex="/comments") == []


def test_markdown_in_place_of_results_is_refused(world, github, engine):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    _fork_run_data(world, engine)
    (world.workspace / "pr-artifact" / "results.json").write_text("# LGTM @maintainers\n", encoding="utf-8")
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 2 and "pr-artifact/results.json" in run.stderr
    assert github.requests(path_regex="/comments") == []


def test_in_a_privileged_mode_the_config_is_read_confined_too(world, github, engine):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    _fork_run_data(world, engine)
    os.symlink(_secret_file(world), world.workspace / "retrieval-gate.yml")
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 2 and "retrieval-gate.yml: config: refused, it is a symbolic link" in run.stderr
    assert github.requests(path_regex="/comments") == [] and TOKEN not in run.everything()


def test_the_fork_comment_lists_the_gate_changes_of_the_prs_head(world, github, engine):
    base = _base(github, engine)
    head = github.commit("feature", {"retrieval-gate.yml": GATE_OFF_CONFIG}, message="fork: gate off")
    github.add_pull(7, head_sha=head, base_sha=base, head_repo="someone/rag")
    _fork_run_data(world, engine)
    run = _comment_run(world, github, head_sha=head)
    assert run.exit_code == 0
    body = github.comments[7][0]["body"]
    assert "**This pull request changes the gate settings**" in body
    assert "> | gate.fail_on_regression | true | false |" in body
    reads = [(r.path, r.query["ref"]) for r in github.requests("GET", "/contents/retrieval-gate.yml")]
    assert sorted(reads) == sorted([("/repos/acme/rag/contents/retrieval-gate.yml", [head]),
                                    ("/repos/acme/rag/contents/retrieval-gate.yml", [base])])


def test_without_the_config_at_the_fork_head_no_change_is_guessed(world, github, engine):
    base = _base(github, engine)
    github.add_pull(7, head_sha="1" * 40, base_sha=base, head_repo="someone/rag")  # a commit the API cannot resolve
    _fork_run_data(world, engine)
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 0 and "changes the gate settings" not in github.comments[7][0]["body"]
    assert "no gate-change notice" in run.stdout


# -- 3. the run's head sha and head repository are required and checked ---------------------------


@pytest.mark.parametrize(
    ("head_sha", "head_repo", "pull_repo", "message"),
    [
        (None, "someone/rag", "someone/rag", "lacks them, so nothing is posted"),
        ("1" * 40, None, "someone/rag", "lacks them, so nothing is posted"),
        ("1" * 40, "someone/rag", "mallory/rag", "head repository is mallory/rag"),
    ],
)
def test_a_run_without_a_verified_head_posts_nothing(world, github, engine, head_sha, head_repo, pull_repo,
                                                     message):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo=pull_repo)
    _fork_run_data(world, engine)
    run = _comment_run(world, github, head_sha=head_sha, head_repo=head_repo)
    assert run.exit_code == 2 and message in run.stderr
    assert github.requests(path_regex="/comments") == []


# -- 4. the write token is used only on push / dispatch to the default branch ----------------------


@pytest.mark.parametrize("mode", ["update-baseline", "write-baseline"])
@pytest.mark.parametrize("event_name", ["pull_request_target", "workflow_run", "pull_request", "schedule"])
def test_a_baseline_write_under_an_event_acting_for_someone_else_is_refused(world, github, engine, event_name, mode):
    event = world.pr_event(7, base_sha=github.branches["main"])
    run = world.run(event_name=event_name, event=event, ref="refs/heads/main",
                    inputs={"mode": mode, "results_file": "results.json"})
    assert run.exit_code == 2 and f"refused under the {event_name} event (nothing written)" in run.stderr
    assert github.requests("POST", "/git/") == github.requests("PATCH") == [] and engine.calls == []


def test_write_baseline_writes_the_eval_jobs_results_without_evaluating(world, github, engine):
    results = FakeEngine(scores=dict(HITS_60)).evaluate(suite_config=SuiteConfig(), suite="default")
    (world.workspace / "eval-out").mkdir()
    (world.workspace / "eval-out" / "results.json").write_text(json.dumps(results.to_json_data()), encoding="utf-8")
    run = world.run(event_name="push", event=world.push_event(ref="refs/heads/main"), ref="refs/heads/main",
                    sha="a" * 40, inputs={"mode": "write-baseline", "results_file": "eval-out/results.json"})
    assert run.exit_code == 0 and run.outputs["mode"] == "write-baseline"
    assert [c for c in engine.calls if c[0] == "evaluate"] == []
    written = json.loads(github.file_at("main", BASELINE) or "{}")
    assert written["aggregates"]["overall"]["hit@5"]["value"] == 0.6
    assert [h["sha"] for h in written["history"]] == ["a" * 40]


def test_write_baseline_refuses_a_symlinked_results_file(world, github, engine):
    os.symlink(_secret_file(world), world.workspace / "results.json")
    run = world.run(event_name="push", event=world.push_event(ref="refs/heads/main"), ref="refs/heads/main",
                    inputs={"mode": "write-baseline", "results_file": "results.json"})
    assert run.exit_code == 2 and "symbolic link" in run.stderr and github.requests("POST", "/git/") == []


# -- 5. secrets appear nowhere ---------------------------------------------------------------------


class _LeakyEngine(FakeEngine):
    """Results whose texts hold the token and the runtime token (a case query, say)."""

    def evaluate(self, **kwargs):  # type: ignore[override]
        results = super().evaluate(**kwargs)
        results.cases[0].query = f"token {TOKEN} runtime {RUNTIME_TOKEN} json \"{RUNTIME_TOKEN}\""
        results.cases[1].id = f"id-{TOKEN}"
        return results


def test_the_token_and_actions_values_are_scrubbed_from_everything_posted_or_written(
    tmp_path, monkeypatch, capsys, github
):
    leaky = _LeakyEngine(scores=dict(HITS_60))
    world = ActionWorld(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, github=github, engine=leaky)
    base = _base(github, leaky)
    env = {"ACTIONS_RUNTIME_TOKEN": RUNTIME_TOKEN, "ACTIONS_STEP_DEBUG": "true"}
    pr = _pr(world, base, extra_env=env)
    push = world.run(event_name="push", event=world.push_event(ref="refs/heads/main"), ref="refs/heads/main",
                     extra_env=env)
    assert pr.exit_code == 1 and push.exit_code == 0
    text = _everything_written(world, github) + pr.everything() + push.everything()
    assert TOKEN not in text and RUNTIME_TOKEN not in text
    results = (world.workspace / pr.outputs["results_path"]).read_text(encoding="utf-8")
    assert "token *** runtime *** json \\\"***\\\"" in results and "id-***" in results
    assert "id-***" in (github.file_at("main", BASELINE) or "")
    assert "true" in text  # short flag values are not treated as secrets
    json.loads(results)  # still valid JSON


def test_the_fork_comment_is_scrubbed_too(world, github, engine):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    _fork_run_data(world, engine)
    path = world.workspace / "pr-artifact" / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cases"][0]["query"] = f"leak {RUNTIME_TOKEN}"
    data["tool_version"] = f"leak {RUNTIME_TOKEN}"  # the comment's footer shows it
    data["suite"] = "default"
    path.write_text(json.dumps(data), encoding="utf-8")

    run = world.run(event_name="workflow_run", event={"workflow_run": {
        "id": 99, "head_sha": "1" * 40, "head_repository": {"full_name": "someone/rag"}}},
        inputs={"pr_number": "7", "results_file": "pr-artifact/results.json"},
        extra_env={"ACTIONS_RUNTIME_TOKEN": RUNTIME_TOKEN})
    assert run.exit_code == 0
    body = github.comments[7][0]["body"]
    assert RUNTIME_TOKEN not in body and "leak ***" in body
    assert RUNTIME_TOKEN not in _everything_written(world, github) + run.everything()


class _HeaderEchoEngine(FakeEngine):
    """An endpoint that echoes its Authorization header into an answer's error, say."""

    def evaluate(self, **kwargs):  # type: ignore[override]
        results = super().evaluate(**kwargs)
        headers = kwargs["suite_config"].options.http.headers
        results.cases[0].error = f"endpoint said: bad header {headers['Authorization']}"
        return results


def test_header_values_read_from_the_environment_are_scrubbed_too(tmp_path, monkeypatch, capsys, github):
    echo = _HeaderEchoEngine(scores=dict(HITS_60))
    world = ActionWorld(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, github=github, engine=echo)
    base = _base(github, echo)
    (world.workspace / "retrieval-gate.yml").write_text(
        BASE_CONFIG + "    options:\n      http_headers:\n        Authorization: Bearer ${RG_SEARCH_KEY}\n",
        encoding="utf-8")
    run = _pr(world, base, extra_env={"RG_SEARCH_KEY": "search-key-0123456789"})
    assert run.exit_code == 1
    assert echo.configs[-1].options.http.headers == {"Authorization": "Bearer search-key-0123456789"}
    results = (world.workspace / run.outputs["results_path"]).read_text(encoding="utf-8")
    assert "bad header Bearer ***" in results
    assert "search-key-0123456789" not in _everything_written(world, github) + run.everything()


def test_a_config_outside_the_repository_cannot_be_read_at_the_base(world, github, engine):
    outside = world.tmp / "elsewhere.yml"
    outside.write_text(BASE_CONFIG, encoding="utf-8")
    report = world.run(event_name="push", event=world.push_event(ref="refs/heads/feature"), ref="refs/heads/feature",
                       inputs={"config": str(outside)})
    # every path of the action stays inside the workspace, in every mode
    assert report.exit_code == 2 and "must stay inside" in report.stderr
    run = _pr(world, _base(github, engine), inputs={"config": str(outside)})
    assert run.exit_code == 2 and "must stay inside" in run.stderr and github.comments.get(7) is None
