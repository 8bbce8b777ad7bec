"""``retrieval-gate action`` in a Gitea / Forgejo Actions job (``GITEA_ACTIONS=true``, beside the
``GITHUB_*`` variables the runner sets too), end to end against a fake Gitea REST API v1 over real
HTTP on 127.0.0.1, through the forge interface (``forge.gitea``): one pull-request comment judged
by the files at the pull request's base, updated not duplicated; the refresh as a job of its own
(no evaluation, the write token) committed once, a concurrent commit detected and merged; tokens
never leaked; ``init --ci gitea`` writing its workflow. The engine is a fake of our interface
(fast), as in the other forges' tests."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from retrieval_gate.errors import ConflictError, ForgeError, PermissionDenied
from retrieval_gate.forge import detect_forge
from retrieval_gate.forge.gitea.api import GiteaRepo
from retrieval_gate.forge.gitea.ci import pipeline_text
from tests.e2e.action_harness import run_entry_point
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_gitea import BOT, HUMAN, FakeGitea, serve_fake_gitea
from tests.helpers import run_cli

TOKEN = "giteaBOTtoken0123456789abcdefSECRET"  # write:issue, read:repository
WRITE_TOKEN = "giteaWRITEtoken0123456789abcdefSECRET"  # write:repository
JOB_TOKEN = "giteaJOBtoken0123456789abcdefSECRETnotused"  # the job's own GITEA_TOKEN: never used
RUNTIME_TOKEN = "actionsRUNTIMEtoken0123456789SECRET"
MARKER = "<!-- retrieval-gate:default -->"
BASELINE = "baselines/default.json"
ALL_HITS = {f"q{i}": 1.0 for i in range(10)}
NINE_HITS = {f"q{i}": (1.0 if i < 9 else 0.0) for i in range(10)}
IMAGE = "ghcr.io/acme/retrieval-gate:1.2.3@sha256:" + "ab" * 32


@pytest.fixture
def gitea() -> Iterator[FakeGitea]:
    with serve_fake_gitea(token=TOKEN, write_token=WRITE_TOKEN) as fake:
        yield fake


class GiteaJob:
    """A job of the workflow ``init --ci gitea`` writes, as the runner starts the image's step."""

    def __init__(self, *, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 gitea: FakeGitea, engine: FakeEngine) -> None:
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.runner_dir = tmp_path / "runner"
        self.runner_dir.mkdir()
        self.monkeypatch, self.capsys, self.gitea, self.engine = monkeypatch, capsys, gitea, engine
        self.runs = 0

    def run(self, *, event_name: str, event: dict, ref: str = "refs/heads/main", sha: str = "c" * 40,
            token: str | None = TOKEN, write_token: str | None = None,
            inputs: dict[str, str] | None = None) -> tuple[int, str, str]:
        self.runs += 1
        event_path = self.runner_dir / f"event{self.runs}.json"
        event_path.write_text(json.dumps(event), encoding="utf-8")
        env = {"GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true", "CI": "true",
               "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event_path),
               "GITHUB_REPOSITORY": self.gitea.repository, "GITHUB_SERVER_URL": self.gitea.url,
               "GITHUB_API_URL": self.gitea.api_url, "GITHUB_WORKSPACE": str(self.workspace),
               "GITHUB_SHA": sha, "GITHUB_REF": ref,
               "GITHUB_RUN_ID": str(9000 + self.runs), "GITHUB_RUN_NUMBER": str(40 + self.runs),
               "GITHUB_OUTPUT": str(self.runner_dir / "output"), "GITEA_TOKEN": JOB_TOKEN,
               "GITHUB_TOKEN": JOB_TOKEN, "ACTIONS_RUNTIME_TOKEN": RUNTIME_TOKEN, "INPUT_AUDIT": "false"}
        if token is not None:
            env["RETRIEVAL_GATE_GITEA_TOKEN"] = token
        if write_token is not None:
            env["RETRIEVAL_GATE_GITEA_WRITE_TOKEN"] = write_token
        env.update({f"INPUT_{k.upper()}": v for k, v in (inputs or {}).items()})
        return run_entry_point(env=env, workspace=self.workspace, engine=self.engine, monkeypatch=self.monkeypatch,
                               capsys=self.capsys)

    def push_event(self) -> dict:
        return {"ref": "refs/heads/main", "repository": {"full_name": self.gitea.repository,
                                                         "default_branch": self.gitea.default_branch}}

    def pull_request(self, number: int, *, base: str, token: str | None = TOKEN,
                     fork: bool = False) -> tuple[int, str, str]:
        if number not in self.gitea.pulls:
            self.gitea.add_pull(number, base_sha=base, fork=fork)
        event = {"action": "synchronized", "number": number, "pull_request": self.gitea.pulls[number],
                 "repository": {"full_name": self.gitea.repository, "default_branch": self.gitea.default_branch}}
        return self.run(event_name="pull_request", event=event, ref=f"refs/pull/{number}/head", sha="f" * 40,
                        token=token)

    def refresh(self, *, write_token: str | None = WRITE_TOKEN, config: str | None = None) -> tuple[int, str, str]:
        """The default branch's two jobs, as the generated workflow runs them (``config``: the refresh
        job's own config file, one that names no ``python:`` retriever)."""
        code, out, err = self.run(event_name="push", event=self.push_event(), inputs={"mode": "report"})
        assert code == 0, err
        (self.workspace / "retrieval-gate-in").mkdir(exist_ok=True)
        (self.workspace / "retrieval-gate-in" / "results.json").write_bytes(
            (self.workspace / "retrieval-gate-out" / "results.json").read_bytes())  # download-artifact
        calls = getattr(self.engine, "calls", [])  # the fake engine's record (the real one keeps none)
        evaluations = calls.count(("evaluate", "default"))
        result = self.run(event_name="push", event=self.push_event(), token=None, write_token=write_token,
                          inputs={"mode": "write-baseline", "results_file": "retrieval-gate-in/results.json",
                                  **({"config": config} if config else {})})
        assert calls.count(("evaluate", "default")) == evaluations  # the refresh evaluates nothing
        return result[0], out + result[1], err + result[2]


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        gitea: FakeGitea) -> GiteaJob:
    return GiteaJob(tmp_path=tmp_path, monkeypatch=monkeypatch, capsys=capsys, gitea=gitea,
                    engine=FakeEngine(scores=dict(NINE_HITS)))


def test_gitea_and_forgejo_runners_are_told_from_github_though_they_set_its_variables() -> None:
    assert detect_forge({"GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true"}).name == "gitea"
    assert detect_forge({"FORGEJO_ACTIONS": "true", "GITHUB_ACTIONS": "true"}).name == "gitea"
    assert detect_forge({"GITHUB_ACTIONS": "true"}).name == "github"


def test_the_run_s_page_is_by_its_id_on_gitea_and_by_its_number_on_forgejo() -> None:
    env = {"GITEA_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/rag", "GITHUB_SERVER_URL": "https://git.example",
           "GITHUB_RUN_ID": "1564", "GITHUB_RUN_NUMBER": "1251"}
    forge = detect_forge(env)
    tokens = forge.read_tokens(env)
    assert forge.read_settings(env, tokens=tokens).run_url == "https://git.example/acme/rag/actions/runs/1564"
    forgejo = {**env, "FORGEJO_ACTIONS": "true"}
    assert forge.read_settings(forgejo, tokens=tokens).run_url == "https://git.example/acme/rag/actions/runs/1251"
    assert forge.read_settings(env, tokens=tokens).api_url == "https://git.example/api/v1"


def test_pull_request_comment_is_judged_at_the_base_and_updated_not_duplicated(job: GiteaJob,
                                                                                gitea: FakeGitea) -> None:
    base = gitea.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    gitea.commit("main", {"README.md": "moved on"})  # the base is not the branch head any more
    gitea.add_comment(3, f"{MARKER} quoted by a human", user=HUMAN)
    first = job.pull_request(3, base=base)
    second = job.pull_request(3, base=base)
    assert first[0] == second[0] == 0, first[2]  # the gate is off: the loss is reported, not failed
    ours = [c for c in gitea.comments[3] if c["user"]["login"] == BOT["login"]]
    assert len(ours) == 1 and len(gitea.comments[3]) == 2  # created once, then edited; the human's untouched
    body = ours[0]["body"]
    assert body.startswith(MARKER) and "| **hit@5** · _indicative_ | 1.000 | 0.900 |" in body
    assert f"[workflow run]({gitea.url}/acme/rag/actions/runs/9002)" in body  # the second run's page (its id)
    assert len(gitea.requests("POST", r"/comments$")) == 1 and len(gitea.requests("PATCH", r"/comments/\d+$")) == 1
    reads = [r for r in gitea.requests("GET", r"/contents/baselines/default\.json$")]
    assert reads and {r.query["ref"][0] for r in reads} == {base}
    assert {r.token for r in gitea.log} == {TOKEN}  # the job's own GITEA_TOKEN is never sent
    everything = "\n".join([*first[1:], *second[1:], (job.runner_dir / "output").read_text(encoding="utf-8")])
    for secret in (TOKEN, JOB_TOKEN, RUNTIME_TOKEN):
        assert secret not in everything


def test_refresh_is_one_commit_and_a_concurrent_one_is_detected_and_kept(job: GiteaJob, gitea: FakeGitea) -> None:
    gitea.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    other = baseline_text(scores=ALL_HITS, sha="e" * 40, history=2)
    gitea.before("POST", r"/contents$", lambda: gitea.commit("main", {BASELINE: other}, message="other refresh"))
    code, out, err = job.refresh()
    assert code == 0, err
    commits = gitea.requests("POST", r"/contents$")
    assert [c.status for c in commits] == [422, 201] and {c.token for c in commits} == {WRITE_TOKEN}
    assert all(f["sha"] for c in commits for f in c.body["files"] if f["operation"] == "update")
    head = gitea.branches["main"]
    assert "[skip ci]" in gitea.messages[head]
    history = [h["sha"] for h in json.loads(gitea.file("main", BASELINE))["history"]]
    assert "e" * 40 in history and history[-1] == "c" * 40  # the other run's entry survived; ours last
    assert WRITE_TOKEN not in out + err
    again, _, err = job.refresh()  # a retried refresh of the same commit: nothing to commit
    assert again == 0, err
    assert len(gitea.requests("POST", r"/contents$")) == 2


def test_the_comment_token_cannot_commit_and_the_write_token_refuses_to_evaluate(job: GiteaJob) -> None:
    code, _, err = job.refresh(write_token=TOKEN)  # the bot's token in the write variable
    assert code == 2 and "HTTP 403" in err and "RETRIEVAL_GATE_GITEA_WRITE_TOKEN" in err and TOKEN not in err
    code, _, err = job.run(event_name="push", event=job.push_event(), token=None, write_token=WRITE_TOKEN)
    assert code == 2 and "runs no evaluation" in err and "RETRIEVAL_GATE_GITEA_WRITE_TOKEN" in err


def test_a_fork_without_a_token_posts_nothing_and_the_log_takes_no_command(job: GiteaJob, gitea: FakeGitea) -> None:
    job.engine.scores = {"q0 ::set-env name=RG::pwned": 1.0, **NINE_HITS}
    base = gitea.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    code, out, err = job.pull_request(4, base=base, token=None, fork=True)
    assert code == 2 and "no RETRIEVAL_GATE_GITEA_TOKEN" in err  # a private repository: nothing to read without it
    assert gitea.comments.get(4, []) == [] and [r for r in gitea.log if r.method != "GET"] == []
    assert "::set-env" not in out + err


def test_init_ci_gitea_writes_its_workflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "refunds.md").write_text("# Refunds\n\nFive to ten days.\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "query": "refund", "gold": ["refunds"]}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    args = ["init", "--no-baseline", "--kb", "kb", "--cases", "cases.jsonl", "--ci", "gitea", "--image", IMAGE,
            "--branch", "trunk"]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    assert "wrote .gitea/workflows/retrieval.yml" in out and not (tmp_path / ".github").exists()
    flow = yaml.safe_load((tmp_path / ".gitea/workflows/retrieval.yml").read_text(encoding="utf-8"))
    retrieval, refresh = flow["jobs"]["retrieval"], flow["jobs"]["refresh"]
    assert flow[True]["push"] == {"branches": ["trunk"]}  # YAML 1.1 reads the key `on` as True
    assert f"docker://{IMAGE}" in [step.get("uses") for step in retrieval["steps"]]
    step = next(s for s in retrieval["steps"] if s.get("uses") == f"docker://{IMAGE}")
    assert "RETRIEVAL_GATE_GITEA_TOKEN" in step["env"] and "RETRIEVAL_GATE_GITEA_WRITE_TOKEN" not in step["env"]
    write = next(s for s in refresh["steps"] if s.get("uses") == f"docker://{IMAGE}")
    assert write["env"]["INPUT_MODE"] == "write-baseline" and "RETRIEVAL_GATE_GITEA_TOKEN" not in write["env"]
    assert refresh["needs"] == "retrieval" and "refs/heads/trunk" in refresh["if"]
    again = run_cli(args, capsys)
    assert again[0] == 0 and "unchanged .gitea/workflows/retrieval.yml" in again[1]  # idempotent


def test_the_docs_show_what_init_writes() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ci.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Gitea and Forgejo"):]
    shown = yaml.safe_load(re.search(r"^```yaml\n(.*?)^```", section, re.M | re.S).group(1))
    image = next(s["uses"] for s in shown["jobs"]["retrieval"]["steps"] if s["uses"].startswith("docker://"))
    written = pipeline_text(image=image.removeprefix("docker://"), suite="default", branch="main", kb="kb",
                            kb_is_file=False)
    assert shown == yaml.safe_load(written)


def _repo(gitea: FakeGitea, *, comment_token: str = TOKEN, write_token: str = WRITE_TOKEN) -> GiteaRepo:
    return GiteaRepo(comment_token=SecretStr(comment_token), write_token=SecretStr(write_token),
                     repository=gitea.repository, api_url=gitea.api_url, server_url=gitea.url,
                     scrub=lambda text: text.replace(WRITE_TOKEN, "***"), log=lambda line: None)


def test_a_commit_on_a_branch_that_moved_is_refused_though_its_files_did_not_change(gitea: FakeGitea) -> None:
    parent = gitea.branches["main"]
    gitea.commit("main", {"README.md": "another writer"})  # Gitea itself would take ours on top of it
    with pytest.raises(ConflictError, match="moved from"):
        _repo(gitea).commit_files(branch="main", parent=parent, files={BASELINE: "{}"}, message="refresh")
    assert gitea.requests("POST", r"/contents$") == []  # refused before anything was sent


def test_a_write_without_its_token_is_refused_naming_the_variable_and_nothing_is_sent(gitea: FakeGitea) -> None:
    with pytest.raises(PermissionDenied, match="no RETRIEVAL_GATE_GITEA_WRITE_TOKEN"):
        _repo(gitea, write_token="").commit_files(branch="main", parent=gitea.branches["main"],
                                                  files={BASELINE: "{}"}, message="refresh")
    with pytest.raises(PermissionDenied, match="no RETRIEVAL_GATE_GITEA_TOKEN"):
        _repo(gitea, comment_token="").upsert_comment(number=3, marker=MARKER, body=MARKER)
    assert [r for r in gitea.log if r.method != "GET"] == []


def test_without_read_user_the_adapter_adopts_no_marker_and_posts_nothing(gitea: FakeGitea) -> None:
    gitea.refuse_identity = True  # a token without the scope read:user: GET /user is 403
    fake = gitea.add_comment(3, f"{MARKER}\nNo regression.", user=HUMAN)
    with pytest.raises(ForgeError, match="read:user") as caught:
        _repo(gitea).upsert_comment(number=3, marker=MARKER, body=f"{MARKER}\nours")
    assert not isinstance(caught.value, PermissionDenied)  # not the "no token: the job passes" case
    assert gitea.comments[3] == [fake] and [r for r in gitea.log if r.method != "GET"] == []
    assert TOKEN not in str(caught.value)


def test_a_pull_request_job_whose_token_lacks_read_user_fails_and_says_which_scope(job: GiteaJob,
                                                                                   gitea: FakeGitea) -> None:
    base = gitea.commit("main", {BASELINE: baseline_text(scores=ALL_HITS, sha="b" * 40)})
    gitea.add_comment(3, f"{MARKER}\nNo regression: the gate passes.", user=HUMAN)
    gitea.refuse_identity = True
    code, out, err = job.pull_request(3, base=base)
    assert code == 2 and "read:user" in err and "passes" not in out + err
    assert [c["body"] for c in gitea.comments[3]] == [f"{MARKER}\nNo regression: the gate passes."]
    assert job.workspace.joinpath("retrieval-gate-out", "comment.md").is_file()  # the comment, kept for the artifact
