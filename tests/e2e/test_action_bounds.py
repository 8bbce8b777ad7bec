"""The action's bounds: every path confined to the workspace, every wait for the
GitHub API capped at the documented 5 minutes, a malformed API answer a named one-line error —
all exit 2, never a traceback, the token never shown."""

from __future__ import annotations

import threading

import pytest
from pydantic import SecretStr

from retrieval_gate.errors import ForgeError
from retrieval_gate.forge.github.api import GitHubRepo
from retrieval_gate.publish.untrusted import scrub_text
from tests.e2e.action_harness import TOKEN, ActionRun, ActionWorld
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_github import FakeGitHub

BASELINE = "baselines/default.json"
HITS = {f"q{i}": 1.0 for i in range(10)}


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(scores=dict(HITS))


def _pr(world: ActionWorld, github: FakeGitHub, engine: FakeEngine, inputs: dict[str, str] | None = None) -> ActionRun:
    base = github.commit("main", {BASELINE: baseline_text(scores=HITS, sha="b" * 40)}, message="baseline")
    return world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base), inputs=inputs,
                     ref="refs/pull/7/merge", sha="c" * 40)


def _bounded(call, seconds: float = 120.0):
    """Run ``call`` in a thread; fail (instead of hanging) when it has not returned in time."""
    box: list = []

    def target() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # re-raised below, in the test's thread
            box.append((False, exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds:.0f} s"
    ok, value = box[0]
    if not ok:
        raise value
    return value


@pytest.mark.parametrize("name, value", [
    ("out_dir", "../../outside"),
    ("out_dir", "/tmp/retrieval-gate-outside"),
    ("kb", "../kb"),
])
def test_an_action_path_outside_the_workspace_exits_2(world, github, engine, name, value):
    run = _pr(world, github, engine, inputs={name: value})
    assert run.exit_code == 2
    assert f"input {name}" in run.stderr or f"{name} " in run.stderr
    assert "outside the workspace" in run.stderr and "Traceback" not in run.stderr
    assert not (world.tmp / "outside").exists()
    assert github.requests("POST") == [] and github.requests("PATCH") == []


def test_a_config_outside_the_workspace_is_refused_before_it_is_read(world, github, engine):
    outside = world.tmp / "outside.yml"
    outside.write_text("suites: [unclosed\n", encoding="utf-8")  # would be a YAML error if parsed
    run = _pr(world, github, engine, inputs={"config": str(outside)})
    assert run.exit_code == 2 and "must stay inside" in run.stderr
    assert "YAML" not in run.stderr and github.comments.get(7) is None


def test_a_symlink_out_of_the_workspace_is_outside(world, github, engine, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (world.workspace / "out").symlink_to(elsewhere)
    run = _pr(world, github, engine, inputs={"out_dir": "out/reports"})
    assert run.exit_code == 2 and "outside the workspace" in run.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_429_asking_for_an_hour_makes_the_action_give_up_at_once(world, github, engine):
    github.fail("GET", "/contents/", status=429, body={"message": "slow down"}, headers={"Retry-After": "3600"},
                times=50)
    run = _bounded(lambda: _pr(world, github, engine))
    assert run.exit_code == 2
    assert "giving up: Retry-After 3600 s > 300 s" in run.stderr
    assert "Traceback" not in run.stderr and TOKEN not in run.everything()
    assert len(github.requests("GET", "/contents/")) == 1  # no retry loop either


@pytest.mark.parametrize("status", [429, 503])
def test_the_adapter_never_waits_past_the_bound(github, status):
    github.fail("GET", "/contents/", status=status, headers={"Retry-After": "301"}, times=5)
    repo = GitHubRepo(token=SecretStr(TOKEN), scrub=masking(TOKEN),
                      repository=github.repository, api_url=github.api_url,
                      seconds_between_writes=None)
    with pytest.raises(ForgeError, match=r"giving up: Retry-After 301 s > 300 s"):
        _bounded(lambda: repo.get_file(path="x.json", ref="main"))


@pytest.mark.parametrize("body", [b"<html><body>Unicorn! 500</body></html>", b'{"name": "x.json", "sha": ', b"[1, 2]"])
def test_a_malformed_api_answer_is_a_github_error(github, body):
    github.fail("GET", "/contents/", status=200, body=body)
    repo = GitHubRepo(token=SecretStr(TOKEN), scrub=masking(TOKEN),
                      repository=github.repository, api_url=github.api_url,
                      seconds_between_writes=None)
    with pytest.raises(ForgeError, match="not the JSON expected") as caught:
        repo.get_file(path="x.json", ref="main")
    assert TOKEN not in str(caught.value)


def test_a_malformed_api_answer_ends_the_action_in_one_line(world, github, engine):
    github.fail("GET", "/contents/", status=200, body=b"<html>Unicorn!</html>")
    run = _pr(world, github, engine)
    assert run.exit_code == 2
    assert "not the JSON expected" in run.stderr and "Traceback" not in run.stderr
    assert TOKEN not in run.everything()


@pytest.mark.parametrize("debug", [False, True])
def test_a_bug_in_the_action_is_one_scrubbed_line_and_exit_3(world, github, engine, monkeypatch, debug):
    def broken(**_: object) -> None:
        raise RuntimeError(f"simulated bug near {TOKEN}")

    monkeypatch.setattr(engine, "evaluate", broken)
    if debug:
        monkeypatch.setenv("RETRIEVAL_GATE_DEBUG", "1")
    else:
        monkeypatch.delenv("RETRIEVAL_GATE_DEBUG", raising=False)
    run = _pr(world, github, engine)
    assert run.exit_code == 3
    assert "internal error: RuntimeError: simulated bug near ***" in run.stderr and "please report" in run.stderr
    assert ("Traceback" in run.stderr) is debug
    assert TOKEN not in run.everything()


def masking(*secrets: object) -> object:
    """The adapter's scrubber: the one scrubber (``scrub_text``) over these secrets."""
    values = [s.get_secret_value() if hasattr(s, "get_secret_value") else str(s) for s in secrets]
    return lambda text: scrub_text(text, secrets=values)
