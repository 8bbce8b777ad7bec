"""``retrieval-gate action`` in an Azure pipeline (TF_BUILD=True), end to end against a fake Azure
DevOps REST API over real HTTP on 127.0.0.1, through the forge interface (``forge.azure``): one
pull-request thread judged by the files at the PR's target commit, updated not duplicated; the
refresh as a job of its own (no evaluation, the write token) pushed as one commit with the old
object id as the concurrency check; ``##vso[`` from case text neutralised in the log. The engine
is a fake of our interface (fast), as in the GitHub and GitLab tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from junitparser import JUnitXml

from tests.e2e.action_harness import run_entry_point
from tests.e2e.fake_azure import BUILD_SERVICE, HUMAN, FakeAzure, serve_fake_azure
from tests.e2e.fake_engine import FakeEngine, baseline_text

TOKEN = "azSYSTEMaccessTOKEN0123456789secret"  # System.AccessToken: Contribute to pull requests
WRITE_TOKEN = "azWRITEpatTOKEN0123456789secret"
MARKER = "<!-- retrieval-gate:default -->"
BASELINE = "baselines/default.json"
ALL_HITS = {f"q{i}": 1.0 for i in range(10)}
NINE_HITS = {f"q{i}": (1.0 if i < 9 else 0.0) for i in range(10)}


@pytest.fixture
def azure() -> Iterator[FakeAzure]:
    with serve_fake_azure(token=TOKEN, write_token=WRITE_TOKEN) as fake:
        yield fake


class AzureJob:
    def __init__(self, *, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 azure: FakeAzure, engine: FakeEngine) -> None:
        self.workspace = tmp_path / "s"
        self.workspace.mkdir()
        self.monkeypatch, self.capsys, self.azure, self.engine = monkeypatch, capsys, azure, engine
        self.runs = 0

    def run(self, *, reason: str, extra: dict[str, str] | None = None, token: str | None = TOKEN,
            write_token: str | None = None, inputs: dict[str, str] | None = None) -> tuple[int, str, str]:
        self.runs += 1
        env = {"TF_BUILD": "True", "BUILD_REASON": reason, "SYSTEM_COLLECTIONURI": self.azure.collection_url,
               "SYSTEM_TEAMPROJECT": self.azure.project, "BUILD_REPOSITORY_NAME": self.azure.repo,
               "BUILD_SOURCEVERSION": "c" * 40, "BUILD_SOURCEBRANCH": "refs/heads/main",
               "BUILD_BUILDID": str(700 + self.runs), "BUILD_SOURCESDIRECTORY": str(self.workspace),
               "INPUT_AUDIT": "false"}
        if token is not None:
            env["SYSTEM_ACCESSTOKEN"] = token
        if write_token is not None:
            env["RETRIEVAL_GATE_AZURE_WRITE_TOKEN"] = write_token
        env.update({f"INPUT_{k.upper()}": v for k, v in (inputs or {}).items()})
        env.update(extra or {})
        return run_entry_point(env=env, workspace=self.workspace, engine=self.engine, monkeypatch=self.monkeypatch,
                               capsys=self.capsys)

    def pull_request(self, number: int, *, target: str, token: str | None = TOKEN,
                     fork: bool = False) -> tuple[int, str, str]:
        if number not in self.azure.pulls:
            self.azure.add_pull(number, target_sha=target)
        return self.run(reason="PullRequest", token=token, extra={
            "SYSTEM_PULLREQUEST_PULLREQUESTID": str(number), "BUILD_SOURCEBRANCH": f"refs/pull/{number}/merge",
            "SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/main", "SYSTEM_PULLREQUEST_ISFORK": str(fork)})

    def refresh(self, *, write_token: str | None = WRITE_TOKEN, config: str | None = None) -> tuple[int, str, str]:
        """The default branch's two jobs, as the generated azure-pipelines.yml runs them (``config``:
        the refresh job's own config file, one that names no ``python:`` retriever)."""
        code, out, err = self.run(reason="IndividualCI", token=None, inputs={"mode": "report"})
        assert code == 0, err
        (self.workspace / "retrieval-gate-in").mkdir(exist_ok=True)
        (self.workspace / "retrieval-gate-in" / "results.json").write_bytes(
            (self.workspace / "retrieval-gate-out" / "results.json").read_bytes())  # DownloadPipelineArtifact
        calls = getattr(self.engine, "calls", [])  # the fake engine's record (the real one keeps none)
        evaluations = calls.count(("evaluate", "default"))
        result = self.run(reason="IndividualCI", token=None, write_token=write_token,
                          inputs={"mode": "write-baseline", "results_file": "retrieval-gate-in/results.json",
                                  **({"config": config} if config else {})})
        assert calls.count(("evaluate", "default")) == evaluations  # the refresh evaluates nothing
        return result[0], out + result[1], err + result[2]

    def out(self, name: str) -> Path:
        return self.workspace / "retrieval-gate-out" / name


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        azure: FakeAzure) -> AzureJob:
    return AzureJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, azure=azure,
                    engine=FakeEngine(scores=dict(NINE_HITS)))


def test_pull_request_thread_is_judged_at_the_target_commit_and_updated_not_duplicated(job: AzureJob,
                                                                                        azure: FakeAzure) -> None:
    target = azure.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    azure.commit("main", {"README.md": "moved on"})  # the target commit is not the branch head any more
    azure.add_thread(3, f"{MARKER} quoted by a human", author=HUMAN)
    first = job.pull_request(3, target=target)
    second = job.pull_request(3, target=target)
    assert first[0] == second[0] == 0, first[2]  # the gate is off: the loss is reported, not failed
    ours = [t for t in azure.threads[3] if t["comments"][0]["author"]["id"] == BUILD_SERVICE["id"]]
    assert len(ours) == 1 and len(azure.threads[3]) == 2  # created once, then edited; the human's untouched
    content = ours[0]["comments"][0]["content"]
    # 10/10 at the target, 9/10 now; n = 10: indicative
    assert content.startswith(MARKER) and "| **hit@5** · _indicative_ | 1.000 | 0.900 |" in content
    assert "▼ −0.100" in content and "1 lost, 0 gained" in content
    assert "_build/results?buildId=702" in ours[0]["comments"][0]["content"]  # the second run's link
    assert len(azure.requests("POST", r"/threads$")) == 1 and len(azure.requests("PATCH", r"/comments/1$")) == 1
    reads = [r for r in azure.requests("GET", r"/items$") if r.query["path"] == ["/baselines/default.json"]]
    assert reads and {r.query["versionDescriptor.version"][0] for r in reads} == {target}
    everything = "\n".join([*first[1:], *second[1:]])
    assert TOKEN not in everything and "::warning" not in everything
    assert "thread on pull request !3" in everything
    cases = {c.name: c for c in next(iter(JUnitXml.fromfile(str(job.out("junit.xml")))))}
    assert len(cases) == 10  # one test case per golden case, for the Tests tab


def test_refresh_is_one_push_with_the_old_object_id_and_survives_a_concurrent_one(job: AzureJob,
                                                                                 azure: FakeAzure) -> None:
    azure.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    other = baseline_text(scores=ALL_HITS, sha="e" * 40, history=2)
    azure.before("POST", r"/pushes$", lambda: azure.commit("main", {BASELINE: other}, message="other refresh"))
    code, out, err = job.refresh()
    assert code == 0, err
    pushes = azure.requests("POST", r"/pushes$")
    assert [p.status for p in pushes] == [409, 201] and {p.token for p in pushes} == {WRITE_TOKEN}
    assert all(p.body["refUpdates"][0]["oldObjectId"] for p in pushes)
    head = azure.branches["main"]
    assert "[skip ci]" in azure.messages[head]
    history = [h["sha"] for h in json.loads(azure.file("main", BASELINE))["history"]]
    assert "e" * 40 in history and history[-1] == "c" * 40  # the other run's entry survived; ours last
    assert WRITE_TOKEN not in out + err
    assert not [c for c in next(iter(JUnitXml.fromfile(str(job.out("junit.xml"))))) if c.result]
    again, _, err = job.refresh()  # a retried refresh of the same commit: nothing to push
    assert again == 0, err
    assert len(azure.requests("POST", r"/pushes$")) == 2


def test_the_comment_token_cannot_push_and_the_write_token_refuses_to_evaluate(job: AzureJob,
                                                                               azure: FakeAzure) -> None:
    code, _, err = job.refresh(write_token=TOKEN)  # System.AccessToken in the write variable
    assert code == 2 and "HTTP 403" in err and "RETRIEVAL_GATE_AZURE_WRITE_TOKEN" in err
    code, _, err = job.run(reason="IndividualCI", token=None, write_token=WRITE_TOKEN)
    assert code == 2 and "runs no evaluation" in err and "RETRIEVAL_GATE_AZURE_WRITE_TOKEN" in err


def test_a_fork_without_a_token_posts_nothing_and_the_log_takes_no_command(job: AzureJob, azure: FakeAzure) -> None:
    job.engine.scores = {"q0 ##vso[task.setvariable variable=RG]pwned": 1.0, **NINE_HITS}
    target = azure.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    code, out, err = job.pull_request(4, target=target, token=None, fork=True)
    assert code == 2 and "no SYSTEM_ACCESSTOKEN" in err  # a private project: nothing to read without it
    assert azure.threads.get(4, []) == [] and [r for r in azure.log if r.method != "GET"] == []
    assert "##vso[" not in out + err
