"""What the action reads back from the base — the baseline, the KB manifest, the config — and from the
runner — the event payload, pr_number, GITHUB_API_URL — meets the CLI's input limits: a bad
baseline or config is exit 2 with one line naming it, a bad manifest a one-line note, never exit 3.
Each runs the action against the fake GitHub API over HTTP."""

from __future__ import annotations

import pytest

from tests.e2e.action_harness import ActionRun, ActionWorld
from tests.e2e.fake_engine import FakeEngine, baseline_text
from tests.e2e.fake_github import FakeGitHub

BASELINE = "baselines/default.json"
MANIFEST = "baselines/default.kb.json"
CONFIG = "suites:\n  default:\n    k: [1, 5]\n"
HOSTILE_JSON = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "huge integer": '{"schema_version": ' + "9" * 5000 + "}",
    "NaN": '{"schema_version": 1, "x": NaN}',
    "Infinity": '{"schema_version": 1, "x": -Infinity}',
    "lone surrogate": '{"schema_version": 1, "x": "\\ud800"}',
    "duplicate keys": '{"schema_version": 1, "schema_version": 2}',
}


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(scores={f"q{i}": 1.0 for i in range(10)})


def _base(github: FakeGitHub, engine: FakeEngine) -> str:
    return github.commit("main", {BASELINE: baseline_text(scores={f"q{i}": 1.0 for i in range(10)},
                                                          sha="b" * 40), "retrieval-gate.yml": CONFIG}, message="base")


def _pr(world: ActionWorld, base: str, **kwargs) -> ActionRun:
    return world.run(event_name="pull_request", event=world.pr_event(7, base_sha=base), ref="refs/pull/7/merge",
                     sha="c" * 40, **kwargs)


def _one_error(run: ActionRun) -> str:
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    return errors[0]


@pytest.mark.parametrize("kind", sorted(HOSTILE_JSON))
def test_a_base_baseline_outside_the_input_limits_is_exit_2_naming_it(world, github, engine, kind):
    base = github.commit("main", {BASELINE: HOSTILE_JSON[kind], "retrieval-gate.yml": CONFIG}, message="base")
    run = _pr(world, base)
    assert run.exit_code == 2
    line = _one_error(run)
    assert f"{BASELINE}" in line and "not a baseline" in line


@pytest.mark.parametrize("kind", sorted(HOSTILE_JSON))
def test_a_base_kb_manifest_outside_the_input_limits_is_a_note_and_the_run_goes_on(world, github, engine, kind):
    base = github.commit("main", {BASELINE: baseline_text(scores={f"q{i}": 1.0 for i in range(10)},
                                                          sha="b" * 40),
                                  MANIFEST: HOSTILE_JSON[kind], "retrieval-gate.yml": CONFIG}, message="base")
    run = _pr(world, base)
    assert run.exit_code == 0, run.stderr
    notes = [line for line in run.stdout.splitlines() if "KB manifest not used" in line]
    assert len(notes) == 1 and MANIFEST in notes[0]


def test_a_five_thousand_digit_integer_in_the_bases_config_is_exit_2_with_its_line(world, github, engine):
    config = CONFIG + "    gate:\n      default_max_drop: " + "9" * 5000 + "\n"
    base = github.commit("main", {BASELINE: baseline_text(scores={f"q{i}": 1.0 for i in range(10)},
                                                          sha="b" * 40), "retrieval-gate.yml": config}, message="b")
    run = _pr(world, base)
    assert run.exit_code == 2
    assert "retrieval-gate.yml" in _one_error(run)


@pytest.mark.parametrize(("event", "what"), [
    ("[" * 100_000 + "]" * 100_000, "nested deeper"),
    ('{"number": ' + "7" * 5000 + "}", "integer of 5,000 digits"),
    ('{"a": 1, "a": 2}', "duplicate key"),
])
def test_a_hostile_event_payload_is_exit_2_naming_it(world, github, engine, event, what):
    run = _run_with_event_text(world, event, _base(github, engine))
    assert run.exit_code == 2
    line = _one_error(run)
    assert "event" in line and what in line


def _run_with_event_text(world: ActionWorld, text: str, base: str) -> ActionRun:
    """A run whose event payload file holds ``text`` as is (not JSON the harness wrote)."""
    original = world.environment

    def environment(**kwargs):
        env = original(**kwargs)
        with open(env["GITHUB_EVENT_PATH"], "w", encoding="utf-8") as handle:
            handle.write(text)
        return env

    world.environment = environment  # type: ignore[method-assign]
    try:
        return _pr(world, base)
    finally:
        world.environment = original  # type: ignore[method-assign]


def test_a_five_thousand_digit_pr_number_is_exit_2(world, github, engine):
    base = _base(github, engine)
    run = _pr(world, base, inputs={"pr_number": "1" * 5000})
    assert run.exit_code == 2
    assert "input pr_number" in _one_error(run)


@pytest.mark.parametrize("url", ["::::", "http://[::1", "ftp://example.com", "https://"])
def test_a_github_api_url_that_is_not_an_url_is_exit_2_naming_it(world, github, engine, url):
    base = _base(github, engine)
    run = _pr(world, base, extra_env={"GITHUB_API_URL": url})
    assert run.exit_code == 2
    assert "GITHUB_API_URL" in _one_error(run)
