"""The action's settings: INPUT_* parsing, the config file with inputs on top, the baseline's
repository path, the event payload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError, UsageError
from retrieval_gate.forge.github import GitHub
from retrieval_gate.publish.action_settings import (
    ActionInputs,
    baseline_repo_path,
    build_action_settings,
    parse_inputs,
)
from retrieval_gate.settings import SuiteConfig

TOKENS = GitHub().read_tokens({})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", None), ("true", True), ("TRUE", True), ("on", True), ("1", True), ("false", False), ("no", False)],
)
def test_fail_on_regression_parses_booleans_and_blank_means_config(value, expected):
    assert parse_inputs({"INPUT_FAIL_ON_REGRESSION": value}).fail_on_regression is expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"INPUT_MODE": "deploy"}, "input mode"),
        ({"INPUT_COMMENT": "maybe"}, "input comment"),
        ({"INPUT_AUDIT": "sometimes"}, "input audit"),
        ({"INPUT_PR_NUMBER": "abc"}, "input pr_number"),
        ({"INPUT_SUITE": "../x"}, "input suite"),
    ],
)
def test_bad_inputs_are_usage_errors_naming_the_input(env, message):
    with pytest.raises(UsageError, match=message):
        parse_inputs(env)


def test_blank_inputs_take_defaults_and_the_token_is_secret():
    env = {"INPUT_SUITE": " ", "INPUT_GITHUB_TOKEN": "ghs_x", "INPUT_PR_NUMBER": "#12"}
    inputs = parse_inputs(env)
    assert (inputs.suite, inputs.baseline_dir, inputs.mode, inputs.comment, inputs.audit, inputs.pr_number) == (
        "default", "baselines", "auto", True, True, 12)
    assert parse_inputs({"INPUT_AUDIT": "false"}).audit is False
    tokens = GitHub().read_tokens(env)
    assert "ghs_x" not in repr(tokens) and tokens.comment.get_secret_value() == "ghs_x"


@pytest.mark.parametrize(
    ("config_baseline", "baseline_dir", "suite", "expected"),
    [
        (None, "baselines", "default", "baselines/default.json"),
        (None, "eval/baselines/", "nightly", "eval/baselines/nightly.json"),
        (None, "./baselines", "default", "baselines/default.json"),
        ("examples/../baselines/x.json", "baselines", "default", "baselines/x.json"),
    ],
)
def test_baseline_repo_path(config_baseline, baseline_dir, suite, expected, tmp_path):
    inputs = ActionInputs(baseline_dir=baseline_dir, suite=suite)
    config = SuiteConfig(baseline=config_baseline)
    assert baseline_repo_path(suite_config=config, inputs=inputs, workspace=tmp_path) == expected


@pytest.mark.parametrize("baseline_dir", ["..", "../other-repo", "/etc"])
def test_baseline_path_must_stay_inside_the_repository(baseline_dir, tmp_path):
    with pytest.raises(UsageError):
        baseline_repo_path(suite_config=SuiteConfig(), inputs=ActionInputs(baseline_dir=baseline_dir),
                           workspace=tmp_path)


def test_settings_from_environment_config_file_and_event(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rg.yml").write_text("suites:\n  default:\n    kb: data/kb\n    k: [1, 10]\n"
                                     "    gate:\n      fail_on_regression: false\n", encoding="utf-8")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 4, "base": {"sha": "b" * 40},
                                                  "head": {"repo": {"full_name": "fork/rag"}}},
                                 "repository": {"default_branch": "trunk"}}), encoding="utf-8")
    s = build_action_settings({
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": "acme/rag",
        "GITHUB_WORKSPACE": str(tmp_path), "GITHUB_REF": "refs/pull/4/merge", "GITHUB_RUN_ID": "9",
        "INPUT_CONFIG": "rg.yml", "INPUT_K": "1,5", "INPUT_FAIL_ON_REGRESSION": "true", "INPUT_STORE": "st",
    }, forge=GitHub(), tokens=TOKENS)
    assert (s.pr_number, s.base_sha, s.is_fork, s.default_branch, s.branch) == (4, "b" * 40, True, "trunk", None)
    assert s.suite_config.kb == "data/kb" and s.suite_config.k == (1, 5)  # file value kept, input overrides
    assert s.suite_config.gate.fail_on_regression is True and s.suite_config.store.path == "st"
    assert s.run_url == "https://github.com/acme/rag/actions/runs/9"
    assert s.out_dir == Path("retrieval-gate-out")


def test_missing_config_file_named_by_the_input_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="config file not found"):
        build_action_settings({"INPUT_CONFIG": "nope.yml"}, forge=GitHub(), tokens=TOKENS)


def test_unreadable_event_payload_is_an_input_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "event.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="event payload is not JSON"):
        build_action_settings({"GITHUB_EVENT_PATH": str(bad)}, forge=GitHub(), tokens=TOKENS)


@pytest.mark.parametrize("mode", ["auto", "pr", "comment", "update-baseline"])
def test_a_retired_input_still_passed_is_refused_with_its_reason_in_any_mode(mode):
    with pytest.raises(UsageError, match=r"input comment_file: mode comment no longer posts a Markdown file.*"
                                         r"pass results_file"):
        parse_inputs({"INPUT_COMMENT_FILE": "pr-artifact/comment.md", "INPUT_MODE": mode})
    assert "comment_file" not in ActionInputs.model_fields
    blank = {"INPUT_COMMENT_FILE": "  ", "INPUT_MODE": mode}  # blank: not passed
    assert parse_inputs(blank).mode == mode
