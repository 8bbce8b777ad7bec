"""The action on pull_request events (and dispatch / workflow_run comment runs), end to end:
environment + event payload → ``retrieval-gate action`` → a fake GitHub API over real HTTP.
The engine fakes only the eval and the audit (fast); the comparison, with its significance test,
and the comment are the product's own. test_action_real_engine.py runs the real eval."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from retrieval_gate.artifacts.baseline import baseline_from_text
from retrieval_gate.compare.comparison import compare
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.settings import SuiteConfig
from tests.e2e.action_harness import TOKEN, ActionWorld, action_yml
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_github import ACTIONS_BOT, HUMAN, OTHER_BOT, FakeGitHub

MARKER = "<!-- retrieval-gate:default -->"
BASELINE = "baselines/default.json"
ALL_HITS = {f"q{i}": 1.0 for i in range(20)}
HITS_60 = {f"q{i}": (1.0 if i < 12 else 0.0) for i in range(20)}  # hit@5 1.0 → 0.6: 8 of 20 lost, none gained
# (the exact one-sided sign test: p = 0.5⁸ ≈ 0.004 < alpha 0.05, so a gate that is on fails)
HIT_ROW = "| **hit@5** · _indicative_ | 1.000 | 0.600 |"  # the comment's row: 20/20 at the base, 12/20 now (n < 30)


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(scores=dict(HITS_60))


def _base_with_baseline(github: FakeGitHub, engine: FakeEngine, scores: dict[str, float] = ALL_HITS) -> str:
    return github.commit("main", {BASELINE: baseline_text(scores=scores, sha="b" * 40)},
                         message="baseline [skip ci]")


def _pr(world: ActionWorld, base_sha: str, *, number: int = 7, inputs: dict[str, str] | None = None,
        fork: bool = False):
    return world.run(event_name="pull_request", event=world.pr_event(number, base_sha=base_sha, fork=fork),
                     inputs=inputs, ref=f"refs/pull/{number}/merge", sha="c" * 40)


def test_sticky_comment_on_page_two_is_edited_and_never_duplicated(world, github, engine):
    base = _base_with_baseline(github, engine)
    for i in range(31):  # page 1 (30) is all someone else's: a human quoting the marker, another bot
        github.add_comment(7, f"{MARKER} quoted by a human {i}" if i == 3 else f"lgtm {i}", user=HUMAN)
    github.add_comment(7, f"{MARKER}\nold numbers", user=OTHER_BOT)
    sticky = github.add_comment(7, f"{MARKER}\nold numbers", user=ACTIONS_BOT)  # 33rd: page 2
    github.add_comment(7, "later human comment", user=HUMAN)
    before = [dict(c) for c in github.comments[7]]

    first = _pr(world, base)
    second = _pr(world, base)

    assert first.exit_code == second.exit_code == 0
    assert len(github.comments[7]) == len(before)  # edited, not duplicated, on both runs
    assert github.requests("POST") == []
    assert [r.path for r in github.requests("PATCH")] == [f"/repos/acme/rag/issues/comments/{sticky['id']}"] * 2
    pages = [r.query.get("page", ["1"])[0] for r in github.requests("GET", r"/issues/7/comments$")]
    assert pages == ["1", "2", "1", "2"]
    edited = next(c for c in github.comments[7] if c["id"] == sticky["id"])
    assert edited["body"].startswith(MARKER) and HIT_ROW in edited["body"]
    assert "actions/runs/4202" in edited["body"]  # the second run's link: the last edit wins
    others = [c for c in github.comments[7] if c["id"] != sticky["id"]]
    assert others == [c for c in before if c["id"] != sticky["id"]]  # nobody else's comment touched
    assert second.outputs["comment_url"] == sticky["html_url"]


def test_first_pr_without_a_baseline_on_the_base_says_so_and_passes(world, github):
    base = github.branches["main"]
    run = _pr(world, base, inputs={"fail_on_regression": "true"})
    assert run.exit_code == 0
    assert run.outputs["verdict"] == "no-baseline"
    assert run.outputs["comparison_path"] == "" and run.outputs["delta_hit_at_k"] == ""
    (post,) = github.requests("POST", r"/issues/7/comments$")
    assert "**First run: there is no baseline for this suite yet**" in post.body["body"]
    assert run.outputs["comment_url"] == github.comments[7][0]["html_url"]
    assert f"no baseline at {BASELINE}" in run.stdout
    assert "::error" not in run.stdout and "::warning" not in run.stdout


def test_baseline_is_read_at_the_base_sha_never_from_the_checkout(world, github, engine):
    base = _base_with_baseline(github, engine, scores=ALL_HITS)
    # Later commits on main change the baseline; the PR's own checkout carries a tampered copy that
    # would make its regression look like an improvement.
    github.commit("main", {BASELINE: baseline_text(scores=HITS_60, sha="d" * 40)}, message="newer")
    tampered = world.workspace / BASELINE
    tampered.parent.mkdir(parents=True)
    tampered.write_text(baseline_text(scores={k: 0.0 for k in ALL_HITS}, sha="e" * 40), encoding="utf-8")

    run = _pr(world, base)

    (read,) = github.requests("GET", "/contents/baselines/default.json")
    assert read.query["ref"] == [base]
    compared = json.loads((world.workspace / run.outputs["comparison_path"]).read_text(encoding="utf-8"))
    assert compared["baseline_sha"] == "b" * 40  # the base's baseline, not d… (newer) nor e… (tampered)
    assert run.outputs["delta_hit_at_k"] == "-0.4000"  # 0.6 now vs 1.0 at the base
    assert run.outputs["regressed"] == "true" and run.outputs["verdict"] == "pass"  # no gate on: passes
    assert run.exit_code == 0


@pytest.mark.parametrize(
    ("gate", "scores", "exit_code", "verdict"),
    [
        ("", HITS_60, 0, "pass"),  # regressed, gate off (the default): report only
        ("false", HITS_60, 0, "pass"),
        ("true", HITS_60, 1, "fail"),
        ("true", ALL_HITS, 0, "pass"),  # gate on, nothing regressed
    ],
)
def test_exit_code_is_1_only_when_a_gate_is_on_and_fails(world, github, engine, gate, scores, exit_code, verdict):
    engine.scores = dict(scores)
    run = _pr(world, _base_with_baseline(github, engine), inputs={"fail_on_regression": gate})
    assert (run.exit_code, run.outputs["verdict"]) == (exit_code, verdict)
    regressed = scores is HITS_60
    assert ("::warning title=retrieval-gate%3A hit@5 regressed::hit@5 on overall: 1.0000 → 0.6000" in run.stdout) \
        == regressed
    assert ("::error title=retrieval-gate%3A gate failed::hit@5 on overall: dropped by 0.400 (8 lost, 0 gained of "
            "20 paired; one-sided p = 0.004), more than the max drop 0.02" in run.stdout) \
        == (exit_code == 1)


def test_outputs_files_and_summary(world, github, engine):
    base = _base_with_baseline(github, engine)
    run = _pr(world, base)
    o = run.outputs
    assert set(o) <= set(action_yml()["outputs"])  # every output written is declared
    assert {k: o[k] for k in ("mode", "verdict", "regressed", "n", "headline_k", "hit_at_k", "recall_at_k",
                              "ndcg_at_k", "delta_hit_at_k", "delta_recall_at_k", "delta_ndcg_at_k")} == {
        "mode": "pr", "verdict": "pass", "regressed": "true", "n": "20", "headline_k": "5",
        "hit_at_k": "0.6000", "recall_at_k": "0.6000", "ndcg_at_k": "0.4500",  # (12 × 0.75) / 20
        "delta_hit_at_k": "-0.4000", "delta_recall_at_k": "-0.4000", "delta_ndcg_at_k": "-0.3000"}
    assert (o["baseline_path"], o["baseline_ref"]) == (BASELINE, base)
    for key in ("results_path", "comparison_path", "html_path", "comment_file"):
        assert not Path(o[key]).is_absolute() and (world.workspace / o[key]).is_file()
    assert (world.workspace / o["comment_file"]).read_text(encoding="utf-8") == github.comments[7][0]["body"]
    metrics = json.loads(o["metrics_json"])
    assert metrics["hit@5"] == {"value": 0.6, "n": 20, "baseline": 1.0, "delta": pytest.approx(-0.4),
                                "status": "regressed", "n_paired": 20}
    # the summary: the full (untruncated) render, appended to the runner's file
    assert run.summary.startswith(MARKER) and HIT_ROW in run.summary
    assert "[workflow run](https://github.example/acme/rag/actions/runs/4201)" in run.summary
    assert "[baseline file](https://github.example/acme/rag/blob/" in run.summary


def test_multiline_outputs_use_heredoc_delimiters(world, github, engine):
    run = _pr(world, _base_with_baseline(github, engine))
    lines = run.output_text.splitlines()
    starts = [line for line in lines if "<<" in line]
    assert len(starts) == len(run.outputs)
    delims = {line.split("<<", 1)[1] for line in starts}
    assert len(delims) == len(starts) and all(d.startswith("ghadelimiter_") for d in delims)


@pytest.mark.parametrize(("gate", "exit_code"), [("", 0), ("true", 1)])
def test_fork_pr_403_on_comment_does_not_fail_the_job(world, github, engine, gate, exit_code):
    github.fail("POST", r"/issues/7/comments$", status=403,
                body={"message": "Resource not accessible by integration"})
    run = _pr(world, _base_with_baseline(github, engine), fork=True, inputs={"fail_on_regression": gate})
    assert run.exit_code == exit_code  # per the gate, never because of the 403
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning") and "comment" in line]
    assert len(warnings) == 1 and "fork" in warnings[0]
    assert run.outputs["comment_url"] == ""
    body = (world.workspace / run.outputs["comment_file"]).read_text(encoding="utf-8")
    assert body.startswith(MARKER) and HIT_ROW in body
    assert "The comment could not be posted** on pull request #7" in run.summary and body in run.summary
    assert github.comments.get(7, []) == []


def test_server_errors_are_retried_then_succeed(world, github, engine):
    base = _base_with_baseline(github, engine)
    github.add_comment(7, f"{MARKER}\nold", user=ACTIONS_BOT)
    github.fail("GET", "/contents/baselines/default.json", status=502)
    github.fail("GET", r"/issues/7/comments$", status=503)
    github.fail("PATCH", r"/issues/comments/\d+$", status=500)
    run = _pr(world, base)
    assert run.exit_code == 0
    assert [r.status for r in github.requests("GET", "/contents/baselines/default.json$")] == [502, 200]
    assert [r.status for r in github.requests("GET", r"/issues/7/comments$")] == [503, 200]
    assert [r.status for r in github.requests("PATCH")] == [500, 200]
    assert len(github.comments[7]) == 1 and HIT_ROW in github.comments[7][0]["body"]


def test_a_5xx_on_create_does_not_post_twice(world, github, engine):
    """The POST may have landed although the answer was 500: look again instead of re-posting."""
    base = _base_with_baseline(github, engine)

    def lands_then_fails() -> None:
        github.add_comment(7, f"{MARKER}\nposted by the lost request", user=ACTIONS_BOT)

    github.before("POST", r"/issues/7/comments$", lands_then_fails)
    github.fail("POST", r"/issues/7/comments$", status=500)
    run = _pr(world, base)
    assert run.exit_code == 0
    assert len(github.comments[7]) == 1 and HIT_ROW in github.comments[7][0]["body"]


def test_token_never_appears_in_output_even_when_an_error_echoes_it(world, github, engine):
    base = _base_with_baseline(github, engine)
    ok = _pr(world, base)
    github.fail("GET", "/contents/baselines/", status=422, body={"message": f"bad ref for token {TOKEN}"})
    failed = _pr(world, base)
    assert ok.exit_code == 0 and failed.exit_code == 2
    assert "error: cannot read the baseline baselines/default.json" in failed.stderr and "***" in failed.stderr
    for run in (ok, failed):
        assert TOKEN not in run.everything()
    for path in world.workspace.rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(encoding="utf-8", errors="replace")


def test_comment_off_posts_nothing_but_writes_the_comment_file(world, github, engine):
    run = _pr(world, _base_with_baseline(github, engine), inputs={"comment": "false"})
    assert run.exit_code == 0 and github.requests(path_regex="/comments") == []
    assert (world.workspace / run.outputs["comment_file"]).read_text(encoding="utf-8").startswith(MARKER)


def test_dispatch_with_pr_number_compares_with_that_prs_base_and_comments(world, github, engine):
    base = _base_with_baseline(github, engine)
    github.commit("main", {BASELINE: baseline_text(scores=HITS_60, sha="d" * 40)}, message="newer")
    github.add_pull(9, head_sha="9" * 40, base_sha=base)
    run = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/heads/feature"),
                    inputs={"pr_number": "9"}, ref="refs/heads/feature")
    assert run.exit_code == 0 and run.outputs["mode"] == "pr"
    assert run.outputs["baseline_ref"] == base and run.outputs["delta_hit_at_k"] == "-0.4000"
    assert len(github.comments[9]) == 1


def test_dispatch_without_inputs_compares_with_the_default_branch(world, github, engine):
    _base_with_baseline(github, engine)
    run = world.run(event_name="workflow_dispatch", event=world.push_event(ref="refs/heads/main"))
    assert run.exit_code == 0 and run.outputs["baseline_ref"] == "main"
    assert run.outputs["verdict"] == "pass" and github.requests(path_regex="/comments") == []


def _fork_run_data(world: ActionWorld, engine: FakeEngine) -> None:
    """What the fork's read-only run uploads: results.json and comparison.json (data, not Markdown)."""
    results = engine.evaluate(suite_config=SuiteConfig(), suite="default")
    baseline = baseline_from_text(baseline_text(scores=ALL_HITS, sha="b" * 40), source="test")
    comparison = compare(results=results, baseline=baseline, gate=GateSettings())
    folder = world.workspace / "pr-artifact"
    folder.mkdir(exist_ok=True)
    (folder / "results.json").write_text(json.dumps(results.to_json_data()), encoding="utf-8")
    (folder / "comparison.json").write_text(json.dumps(comparison.model_dump(mode="json")), encoding="utf-8")


def workflow_run_event(github: FakeGitHub, *, head_sha: str | None, head_repo: str | None = "someone/rag"):
    run: dict = {"id": 99, "event": "pull_request"}
    if head_sha is not None:
        run["head_sha"] = head_sha
    if head_repo is not None:
        run["head_repository"] = {"full_name": head_repo}
    return {"workflow_run": run, "repository": {"full_name": github.repository, "default_branch": "main"}}


def _comment_run(world, github, *, head_sha: str | None, number: int = 7, head_repo: str | None = "someone/rag",
                 inputs: dict[str, str] | None = None):
    values = {"pr_number": str(number), "results_file": "pr-artifact/results.json",
              "comparison_file": "pr-artifact/comparison.json"}
    values.update(inputs or {})
    return world.run(event_name="workflow_run", event=workflow_run_event(github, head_sha=head_sha,
                                                                         head_repo=head_repo), inputs=values)


def test_workflow_run_renders_the_fork_comment_from_its_data_and_posts_it_to_the_verified_pr(world, github, engine):
    github.add_pull(7, head_sha="1" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    _fork_run_data(world, engine)
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 0 and run.outputs["mode"] == "comment"
    (comment,) = github.comments[7]
    assert comment["body"].startswith(MARKER + "\n> ℹ️ Rendered by this repository's workflow from the data of a "
                                      "fork's run")
    assert HIT_ROW + " 🔴 ▼ −0.400 |" in comment["body"]  # rendered here from the validated data
    assert "(https://github.example/acme/rag/actions/runs/99)" in comment["body"]
    assert ("evaluate", "default") not in engine.calls[1:]  # nothing evaluated in the privileged job
    # the fork's audit is not relayed: one line says so, and nothing was audited here
    assert "Golden-set audit: not shown for a pull request from a fork" in comment["body"]
    assert engine.audits == [] and github.requests("GET", r"\.audit\.json$") == []
    assert run.outputs["comment_url"] == comment["html_url"]
    again = _comment_run(world, github, head_sha="1" * 40)
    assert again.exit_code == 0 and len(github.comments[7]) == 1


def test_workflow_run_refuses_a_pr_whose_head_is_not_the_runs_head(world, github, engine):
    github.add_pull(7, head_sha="2" * 40, base_sha=github.branches["main"], head_repo="someone/rag")
    _fork_run_data(world, engine)
    run = _comment_run(world, github, head_sha="1" * 40)
    assert run.exit_code == 2 and "refusing to post" in run.stderr
    assert github.requests(path_regex="/comments") == []


def test_summary_over_the_forges_limit_goes_to_a_file_and_the_summary_keeps_the_comment(
    world, github, engine, monkeypatch
):
    """Thousands of cases lost: the summary (a thousand lost cases listed, ~160 kB) is over the
    forge's limit — GitHub's 1 MiB, set to 128 KiB here (our own constant) —, the comment is bounded
    (65,000 characters)."""
    from retrieval_gate.forge.github import GitHub

    limit = 128 * 1024
    monkeypatch.setattr(GitHub, "limits", dataclasses.replace(GitHub.limits, summary_bytes=limit))
    many = {f"q{i}": 1.0 for i in range(8000)}
    base = _base_with_baseline(github, engine, scores=many)
    engine.scores = dict.fromkeys(many, 0.0)
    run = _pr(world, base)
    assert run.exit_code == 0
    assert len(run.summary.encode()) < limit  # what the forge accepts
    assert "over GitHub's 0.125 MiB limit" in run.summary
    assert MARKER in run.summary and "| **hit@5** | 1.000 | 0.000 |" in run.summary  # the bounded comment
    full = world.workspace / run.outputs["html_path"].replace("report.html", "summary.md")
    assert len(full.read_bytes()) > limit and full.read_text().startswith(MARKER)


def test_the_comment_links_to_the_suites_page_of_the_published_history_site(world, github, engine):
    base = _base_with_baseline(github, engine)
    run = _pr(world, base, inputs={"history_url": "https://acme.github.io/rag/"})

    assert run.exit_code == 0
    body = github.comments[7][-1]["body"]
    assert "[history](https://acme.github.io/rag/default.html)" in body


def test_a_history_url_that_is_not_an_http_url_is_refused_naming_the_input(world, github, engine):
    run = _pr(world, _base_with_baseline(github, engine), inputs={"history_url": "javascript:alert(1)"})

    assert run.exit_code == 2
    assert "input history_url" in run.stderr and github.requests("POST") == []
