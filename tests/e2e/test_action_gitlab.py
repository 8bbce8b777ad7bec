"""``retrieval-gate action`` in a GitLab pipeline (GITLAB_CI=true), end to end against a fake
GitLab API over real HTTP on 127.0.0.1, through the forge interface (``forge.gitlab``): the
merge-request note judged by the base from the API's ``diff_refs``, the refresh as a job of its own
(no evaluation, the write token) committing once under a concurrent push, a fork's pipeline without
a token, the JUnit file. The engine is a fake of our interface (fast), as in the GitHub tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from tests.e2e.action_harness import run_entry_point
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_gitlab import HUMAN, FakeGitLab, serve_fake_gitlab

TOKEN = "glpat-FAKEtoken0123456789SECRETvalue"  # the note token (Reporter)
WRITE_TOKEN = "glpat-WRITEtoken0123456789SECRETvalue"  # the refresh's token (Developer)
JOB_TOKEN = "glcbt-JOBtoken0123456789SECRET"
MARKER = "<!-- retrieval-gate:default -->"
BASELINE = "baselines/default.json"
ALL_HITS = {f"q{i}": 1.0 for i in range(20)}
HITS_60 = {f"q{i}": (1.0 if i < 12 else 0.0) for i in range(20)}  # hit@5 1.0 → 0.6: 8 of 20 lost, none gained
# (the exact one-sided sign test: p = 0.5⁸ ≈ 0.004 < alpha 0.05, so a gate that is on fails)


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with serve_fake_gitlab(token=TOKEN, write_token=WRITE_TOKEN) as fake:
        yield fake


class GitLabJob:
    def __init__(self, *, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 gitlab: FakeGitLab, engine: FakeEngine) -> None:
        self.workspace = tmp_path / "project"
        self.workspace.mkdir()
        self.monkeypatch, self.capsys, self.gitlab, self.engine = monkeypatch, capsys, gitlab, engine
        self.runs = 0

    def run(self, *, source: str, extra: dict[str, str] | None = None, token: str | None = TOKEN,
            write_token: str | None = None, inputs: dict[str, str] | None = None) -> tuple[int, str, str]:
        self.runs += 1
        env = {
            "GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": source,
            "CI_API_V4_URL": self.gitlab.api_url, "CI_SERVER_URL": self.gitlab.url,
            "CI_PROJECT_ID": str(self.gitlab.project_id), "CI_PROJECT_PATH": self.gitlab.project_path,
            "CI_PROJECT_DIR": str(self.workspace), "CI_DEFAULT_BRANCH": "main", "CI_COMMIT_SHA": "c" * 40,
            "CI_PIPELINE_ID": str(900 + self.runs),
            "CI_PIPELINE_URL": f"{self.gitlab.url}/{self.gitlab.project_path}/-/pipelines/{900 + self.runs}",
            "CI_JOB_TOKEN": JOB_TOKEN, "INPUT_AUDIT": "false",
        }
        if token is not None:
            env["RETRIEVAL_GATE_GITLAB_TOKEN"] = token
        if write_token is not None:
            env["RETRIEVAL_GATE_GITLAB_WRITE_TOKEN"] = write_token
        env.update({f"INPUT_{k.upper()}": v for k, v in (inputs or {}).items()})
        env.update(extra or {})
        return run_entry_point(env=env, workspace=self.workspace, engine=self.engine, monkeypatch=self.monkeypatch,
                               capsys=self.capsys)

    def merge_request(self, iid: int, *, base_sha: str, fork: bool = False, token: str | None = TOKEN,
                      inputs: dict[str, str] | None = None, claimed_base: str | None = None) -> tuple[int, str, str]:
        if iid not in self.gitlab.merge_requests:
            self.gitlab.add_merge_request(iid, base_sha=base_sha, source_project_id=99 if fork else None)
        base_sha = claimed_base or base_sha  # what CI_MERGE_REQUEST_DIFF_BASE_SHA says
        return self.run(source="merge_request_event", token=token, inputs=inputs, extra={
            "CI_MERGE_REQUEST_IID": str(iid), "CI_MERGE_REQUEST_DIFF_BASE_SHA": base_sha,
            "CI_MERGE_REQUEST_PROJECT_PATH": self.gitlab.project_path,
            "CI_MERGE_REQUEST_PROJECT_ID": str(self.gitlab.project_id),
            "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "someone/rag" if fork else self.gitlab.project_path,
        })

    def refresh(self, *, write_token: str | None = WRITE_TOKEN, sha: str = "c" * 40,
                message: str | None = None, config: str | None = None) -> tuple[int, str, str]:
        """The default branch's two jobs, as the generated .gitlab-ci.yml runs them: ``retrieval``
        evaluates (mode report, no write token), ``retrieval-refresh`` takes its results.json and
        commits (mode write-baseline, the write token, no evaluation)."""
        main_push = {"CI_COMMIT_BRANCH": "main", "CI_COMMIT_SHA": sha}
        if message is not None:
            main_push["CI_COMMIT_MESSAGE"] = message
        code, out, err = self.run(source="push", token=None, extra=main_push, inputs={"mode": "report"})
        assert code == 0, err
        calls = getattr(self.engine, "calls", [])  # the fake engine's record (the real one keeps none)
        evaluations = calls.count(("evaluate", "default"))
        result = self.run(source="push", token=None, write_token=write_token, extra=main_push,
                          inputs={"mode": "write-baseline", "results_file": "retrieval-gate-out/results.json",
                                  **({"config": config} if config else {})})
        assert calls.count(("evaluate", "default")) == evaluations  # the refresh evaluates nothing
        return result[0], out + result[1], err + result[2]

    def out_file(self, name: str) -> Path:
        return self.workspace / "retrieval-gate-out" / name


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        gitlab: FakeGitLab) -> GitLabJob:
    return GitLabJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, gitlab=gitlab,
                     engine=FakeEngine(scores=dict(HITS_60)))


def _everything(job: GitLabJob, *texts: str) -> str:
    files = [p.read_text(encoding="utf-8") for p in (job.workspace / "retrieval-gate-out").glob("*") if p.is_file()]
    return "\n".join([*texts, *files])


def test_merge_request_note_is_judged_by_the_base_and_updated_not_duplicated(job: GitLabJob,
                                                                               gitlab: FakeGitLab) -> None:
    gate_on = "suites:\n  default:\n    gate:\n      fail_on_regression: true\n"
    base = gitlab.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40),
                                  "retrieval-gate.yml": gate_on})
    # The merge request edits baselines/ and the gate in its own checkout: neither may judge it.
    (job.workspace / "baselines").mkdir()
    (job.workspace / BASELINE).write_text(baseline_text(scores=HITS_60, sha="d" * 40), encoding="utf-8")
    (job.workspace / "retrieval-gate.yml").write_text(gate_on.replace("true", "false"), encoding="utf-8")
    gitlab.commit("main", {"README.md": "moved on"})  # the base sha is not the branch head any more
    gitlab.add_note(5, f"{MARKER} quoted by a human", author=HUMAN)

    first = job.merge_request(5, base_sha=base)
    second = job.merge_request(5, base_sha=base)

    assert first[0] == second[0] == 1, first[2]  # the base's gate is on, and hit@5 dropped 1.0 → 0.6
    ours = [n for n in gitlab.notes[5] if n["author"]["username"] == "project_12_bot"]
    assert len(ours) == 1 and len(gitlab.notes[5]) == 2  # created once, then edited; the human's note untouched
    assert ours[0]["body"].startswith(MARKER)
    assert "| **hit@5** · _indicative_ | 1.000 | 0.600 | 🔴 ▼ −0.400 |" in ours[0]["body"]
    assert "pipelines/902" in ours[0]["body"]  # the second run's link
    assert len(gitlab.requests("POST", r"/notes$")) == 1 and len(gitlab.requests("PUT", r"/notes/\d+$")) == 1
    reads = [r for r in gitlab.requests("GET", r"/repository/files/") if "baselines/default.json" in r.path]
    assert reads and {r.query["ref"][0] for r in reads} == {base}
    assert gitlab.notes[5][0]["body"] == f"{MARKER} quoted by a human"
    junit = JUnitXml.fromfile(str(job.out_file("junit.xml")))
    cases = {c.name: c for c in next(iter(junit))}
    assert isinstance(cases["gate"].result[0], Failure) and "hit@5" in cases["gate"].result[0].message
    assert cases["gate"]._elem.get("file") == "retrieval-gate.yml"  # the file that sets the gate, not the cases file
    assert len(cases) == 21  # the gate, and a testcase per case (20)
    everything = _everything(job, *first[1:], *second[1:])
    assert TOKEN not in everything and JOB_TOKEN not in everything
    assert "::warning" not in everything and "::error" not in everything  # no GitHub workflow commands on GitLab


def test_default_branch_refresh_commits_once_under_a_concurrent_push(job: GitLabJob, gitlab: FakeGitLab) -> None:
    gitlab.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    other = baseline_text(scores=ALL_HITS, sha="e" * 40, history=2)
    # Another pipeline's refresh lands between our read and our commit: ours is refused and merged again.
    gitlab.before("POST", r"/repository/commits$", lambda: gitlab.commit("main", {BASELINE: other},
                                                                         message="other refresh"))
    code, out, err = job.refresh()

    assert code == 0, err
    posts = gitlab.requests("POST", r"/repository/commits$")
    assert [p.status for p in posts] == [400, 201]
    head = gitlab.branches["main"]
    assert "[skip ci]" in gitlab.messages[head]
    history = [h["sha"] for h in json.loads(gitlab.file("main", BASELINE))["history"]]
    assert "e" * 40 in history and history[-1] == "c" * 40  # the other run's entry survived; ours last
    assert "conflicted" in out + err
    assert {p.token for p in posts} == {WRITE_TOKEN}
    assert WRITE_TOKEN not in _everything(job, out, err)
    # The refresh's JUnit file is against the baseline it just accepted: no failure left for the widget.
    junit = JUnitXml.fromfile(str(job.out_file("junit.xml")))
    assert not [c for c in next(iter(junit)) if c.result]

    again, _, err = job.refresh()  # a retried refresh of the same commit
    assert again == 0, err
    assert len(gitlab.requests("POST", r"/repository/commits$")) == 2  # no timestamp-only commit


def test_refresh_with_an_unrelated_concurrent_push_lands_on_top_in_one_commit(job: GitLabJob,
                                                                               gitlab: FakeGitLab) -> None:
    gitlab.before("POST", r"/repository/commits$", lambda: gitlab.commit("main", {"src/app.py": "x = 1\n"}))
    code, _, err = job.refresh()
    assert code == 0, err
    assert [p.status for p in gitlab.requests("POST", r"/repository/commits$")] == [201]
    assert gitlab.file("main", "src/app.py") == "x = 1\n"  # nothing of the other push lost
    assert gitlab.file("main", BASELINE) is not None


def test_fork_pipeline_without_a_token_posts_nothing_and_says_so(job: GitLabJob, gitlab: FakeGitLab) -> None:
    base = gitlab.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    code, out, err = job.merge_request(8, base_sha=base, fork=True, token=None)
    assert code == 0, err
    assert gitlab.notes.get(8, []) == []
    assert [r for r in gitlab.log if r.method != "GET"] == []
    assert "RETRIEVAL_GATE_GITLAB_TOKEN" in out + err  # the job log says why nothing was posted …
    assert "a merge request from a fork" in out + err
    assert "withheld from a merge request whose source branch is not protected" in out + err  # … in GitLab's words
    assert "workflow_run" not in out + err and "job summary" not in out + err and "#8" not in out + err
    assert job.out_file("comment.md").read_text(encoding="utf-8").startswith(MARKER)
    assert job.out_file("junit.xml").exists()


def test_branch_push_that_is_not_the_default_branch_reports_without_the_api(job: GitLabJob,
                                                                            gitlab: FakeGitLab) -> None:
    code, _, err = job.run(source="push", extra={"CI_COMMIT_BRANCH": "feature"})
    assert code == 0, err
    assert [r for r in gitlab.log if r.method != "GET"] == []
    assert job.out_file("results.json").exists() and job.out_file("junit.xml").exists()




def test_a_base_sha_the_pipeline_states_but_the_merge_request_does_not_have_is_refused(job: GitLabJob,
                                                                                      gitlab: FakeGitLab) -> None:
    base = gitlab.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    own = gitlab.commit("main", {BASELINE: baseline_text(scores=HITS_60, sha="d" * 40)})
    code, _, err = job.merge_request(6, base_sha=base, claimed_base=own)  # the MR's .gitlab-ci.yml set it
    assert code == 2
    assert "diff_refs" in err and base[:12] in err and own[:12] in err
    assert gitlab.notes.get(6, []) == [] and ("evaluate", "default") not in job.engine.calls


def test_a_job_holding_the_write_token_refuses_to_evaluate_or_load_python_code(job: GitLabJob,
                                                                              gitlab: FakeGitLab) -> None:
    code, _, err = job.run(source="push", token=None, write_token=WRITE_TOKEN, extra={"CI_COMMIT_BRANCH": "main"})
    assert code == 2 and "RETRIEVAL_GATE_GITLAB_WRITE_TOKEN" in err and "runs no evaluation" in err
    (job.workspace / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    retriever: python:evil:search\n", encoding="utf-8")
    code, _, err = job.run(source="push", token=None, write_token=WRITE_TOKEN, extra={"CI_COMMIT_BRANCH": "main"},
                           inputs={"mode": "update-baseline"})
    assert code == 2 and "python: retriever is refused" in err
    assert job.engine.calls == [] and [r for r in gitlab.log if r.method != "GET"] == []
    assert WRITE_TOKEN not in err


def test_the_refresh_job_refuses_a_config_that_declares_a_python_retriever(job: GitLabJob,
                                                                         gitlab: FakeGitLab) -> None:
    """docs/ci.md: a process holding the write token refuses a python: retriever, in mode
    write-baseline too (which loads none), naming the variable and never its value."""
    (job.workspace / "retrieval-gate.yml").write_text(
        "suites:\n  default:\n    retriever: python:evil:search\n", encoding="utf-8")
    code, _, err = job.refresh()
    assert code == 2 and "python: retriever is refused while RETRIEVAL_GATE_GITLAB_WRITE_TOKEN is set" in err
    assert WRITE_TOKEN not in err
    assert [r for r in gitlab.log if r.method not in ("GET", "HEAD")] == []


def test_the_note_token_cannot_commit_and_a_wrong_token_is_named(job: GitLabJob, gitlab: FakeGitLab) -> None:
    code, _, err = job.refresh(write_token=TOKEN)  # the Reporter's token in the write variable
    assert code == 2 and "HTTP 403" in err and "RETRIEVAL_GATE_GITLAB_WRITE_TOKEN" in err
    base = gitlab.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    code, out, err = job.merge_request(9, base_sha=base, token="glpat-WRONGtoken0123456789")
    assert "RETRIEVAL_GATE_GITLAB_TOKEN" in out + err and "refused" in out + err
    assert "glpat-WRONGtoken0123456789" not in out + err


def test_the_refresh_commit_names_the_merge_request_it_measured(job: GitLabJob, gitlab: FakeGitLab) -> None:
    gitlab.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    code, _out, err = job.refresh(message="Merge branch 'chunks' into 'main'\n\nSee merge request group/kb!17\n")
    assert code == 0, err
    message = gitlab.messages[gitlab.branches["main"]]
    assert message.endswith(f"for {'c' * 12} (merge request !17) [skip ci]"), message
