"""The hardening, unit by unit: config aliases refused, header values read from the
environment (and remembered as secrets), URLs with credentials refused, which events may write
the baseline, the confined reader of the privileged modes, and secret scrubbing."""

from __future__ import annotations

import base64
import json
import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.errors import InputError, UsageError
from retrieval_gate.forge.base import ForgeSettings
from retrieval_gate.forge.github import GitHub
from retrieval_gate.publish.action_settings import runner_secrets
from retrieval_gate.publish.modes import write_refusal
from retrieval_gate.publish.untrusted import read_confined, scrub_text
from retrieval_gate.retrieve.factory import RetrieverBuilder
from retrieval_gate.retrieve.spec import parse_retriever
from retrieval_gate.settings import load_config, parse_config, resolve_suite
from tests.helpers import local_server

HEADERS = "suites:\n  default:\n    retriever: http://127.0.0.1:9/search\n    options:\n      http_headers:\n"


# -- YAML aliases ---------------------------------------------------------------------------------


def test_a_recursive_alias_in_the_config_is_refused_with_its_line(tmp_path):
    """Aliases are allowed in a config (suites share settings) but capped (load/yamltext.py)."""
    path = tmp_path / "rg.yml"
    path.write_text("suites:\n  default: {}\nloop: &x [1, *x]\n", encoding="utf-8")
    with pytest.raises(InputError, match="recursive alias") as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}:3: YAML error: ")


def test_a_billion_laughs_config_is_refused_before_it_expands():
    names = "abcdefghi"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{names[i + 1]}: &{names[i + 1]} [{', '.join(['*' + names[i]] * 9)}]" for i in range(8)]
    with pytest.raises(InputError, match="expands to more than"):
        parse_config("\n".join(lines) + "\n", source=Path("bomb.yml"))


def test_anchors_without_aliases_are_harmless():
    assert parse_config("suites:\n  default: &d\n    k: [1, 5]\n", source=Path("rg.yml")).suites["default"].k == (1, 5)


# -- http_headers from the environment ------------------------------------------------------------


def _suite(text: str, env: dict[str, str] | None):
    config = parse_config(text, source=Path("rg.yml"))
    return resolve_suite(config, suite="default", config_path=Path("rg.yml"), env=env)


def test_header_values_name_environment_variables_and_are_remembered_as_secrets():
    suite = _suite(HEADERS + "        Authorization: Bearer ${SEARCH_KEY}\n        X-Team: rag\n",
                   {"SEARCH_KEY": "s3cr3t-value"})
    assert suite.options.http.headers == {"Authorization": "Bearer s3cr3t-value", "X-Team": "rag"}
    assert suite.env_secrets == ("s3cr3t-value",)
    assert suite.model_copy(update={"k": (1,)}).env_secrets == ("s3cr3t-value",)  # kept through a copy


def test_without_an_environment_references_stay_as_written():
    """compare and score resolve the suite without one: nothing is sent, nothing is read."""
    suite = _suite(HEADERS + "        Authorization: ${SEARCH_KEY}\n", None)
    assert suite.options.http.headers == {"Authorization": "${SEARCH_KEY}"} and suite.env_secrets == ()


def test_eval_reads_header_variables_from_the_process_environment(tmp_path, monkeypatch, capsys):
    """The CLI's eval resolves ${NAME} from the environment (read once, by action_settings): an
    unset variable stops it with the header named, before anything is evaluated."""
    (tmp_path / "rg.yml").write_text(HEADERS + "        Authorization: Bearer ${RG_TEST_KEY}\n", encoding="utf-8")
    monkeypatch.delenv("RG_TEST_KEY", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--config", str(tmp_path / "rg.yml"), "--kb", str(tmp_path), "--cases", str(tmp_path / "c"),
              "--out", str(tmp_path / "out")])
    assert exited.value.code == 2
    assert "options.http_headers.Authorization: environment variable RG_TEST_KEY is not set" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${MISSING_KEY}", "environment variable MISSING_KEY is not set"),
        ("token ${INPUT_GITHUB_TOKEN}", "is a runner variable"),
        ("${ACTIONS_RUNTIME_TOKEN}", "is a runner variable"),
        ("${GITHUB_TOKEN}", "is a runner variable"),
    ],
)
def test_a_header_variable_that_is_missing_or_the_runners_own_is_refused(value, message):
    env = {"INPUT_GITHUB_TOKEN": "t", "ACTIONS_RUNTIME_TOKEN": "r", "GITHUB_TOKEN": "g"}
    with pytest.raises(InputError, match=message):
        _suite(HEADERS + f"        Authorization: '{value}'\n", env)


def _echo(seen: list[str | None]) -> type[BaseHTTPRequestHandler]:
    """An endpoint that records each request's Authorization header into ``seen`` (the test's own)."""

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.headers.get("Authorization"))
            payload = json.dumps({"ids": ["a"]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    return Echo


def test_the_resolved_header_reaches_the_endpoint():
    seen: list[str | None] = []
    with local_server(_echo(seen)) as base:
        url = f"{base}/search"
        suite = _suite(f"suites:\n  default:\n    retriever: {url}\n    options:\n      http_headers:\n"
                       "        Authorization: Bearer ${SEARCH_KEY}\n", {"SEARCH_KEY": "k-123"})
        retriever = RetrieverBuilder(kb=None, options=suite.options).build(suite.retrievers[0])
        [answer] = retriever.search(["q"], 1)
        assert answer.ids == ("a",) and seen == ["Bearer k-123"]
        assert "k-123" not in json.dumps(retriever.fingerprint())


# -- URLs with credentials ------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://alice:pw-Secret1@host/search", "https://token-Secret1@host:8443/s"])
def test_a_retriever_url_with_credentials_is_refused_without_showing_them(url):
    with pytest.raises(UsageError) as err:
        parse_retriever(url)
    assert "Secret1" not in str(err.value) and "credentials" in str(err.value)
    assert "http_headers" in str(err.value)


def test_the_cli_refuses_a_url_with_credentials_and_never_prints_them(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--kb", str(tmp_path), "--cases", str(tmp_path / "c.jsonl"),
              "--retriever", "http://alice:pw-Secret1@127.0.0.1:9/search", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert exited.value.code == 2 and "credentials" in captured.err
    assert "Secret1" not in captured.out + captured.err and not (tmp_path / "out").exists()


# -- which events may write the baseline ----------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "branch", "allowed"),
    [
        ("push", "main", True),
        ("workflow_dispatch", "main", True),
        ("push", "feature", False),
        ("workflow_dispatch", "release", False),
        ("workflow_dispatch", None, False),  # a tag
        ("pull_request_target", "main", False),  # GITHUB_REF is the base branch there
        ("workflow_run", "main", False),  # GITHUB_REF is the default branch there
        ("pull_request", "main", False),
        ("schedule", "main", False),
    ],
)
@pytest.mark.parametrize("mode", ["update-baseline", "write-baseline"])
def test_only_push_and_dispatch_on_the_default_branch_write_the_baseline(mode, event, branch, allowed):
    refusal = write_refusal(mode=mode, event_name=event, branch=branch, default_branch="main")
    assert (refusal is None) == allowed
    assert write_refusal(mode="pr", event_name=event, branch=branch, default_branch="main") is None


# -- the confined reader --------------------------------------------------------------------------


@pytest.fixture
def workspace(tmp_path) -> Path:
    root = tmp_path / "ws"
    (root / "out").mkdir(parents=True)
    (root / "out" / "results.json").write_text("{}", encoding="utf-8")
    (tmp_path / "secret").write_text("TOKEN", encoding="utf-8")
    return root


def test_a_regular_file_inside_the_workspace_is_read(workspace):
    assert read_confined("out/results.json", workspace=workspace, max_bytes=2, what="f") == b"{}"
    assert read_confined(workspace / "out" / "results.json", workspace=workspace, max_bytes=2, what="f") == b"{}"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda ws: os.symlink(ws / "out" / "results.json", ws / "link.json"), "is a symbolic link"),
        (lambda ws: os.symlink(ws.parent / "secret", ws / "link.json"), "is a symbolic link"),
        (lambda ws: os.symlink(ws.parent, ws / "up") or None, "outside the workspace"),
        (lambda ws: os.mkfifo(ws / "link.json"), "not a regular file"),
        (lambda ws: (ws / "link.json").mkdir(), "not a regular file"),
    ],
)
def test_links_folders_fifos_and_escapes_are_refused(workspace, make, message):
    make(workspace)
    name = "up/secret" if "outside" in message else "link.json"
    with pytest.raises(InputError, match=message):
        read_confined(name, workspace=workspace, max_bytes=100, what="results_file")


def test_dot_dot_out_of_the_workspace_is_refused(workspace):
    with pytest.raises(InputError, match="outside the workspace"):
        read_confined("../secret", workspace=workspace, max_bytes=100, what="results_file")


def test_a_file_over_the_cap_is_refused(workspace):
    (workspace / "big.json").write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="101 bytes is over the 100 byte cap"):
        read_confined("big.json", workspace=workspace, max_bytes=100, what="results_file")


# -- scrubbing ------------------------------------------------------------------------------------


def test_scrub_masks_raw_json_escaped_and_base64_forms():
    secret = 'pa"ss\\word-123'
    text = f'{secret} {json.dumps(secret)} {base64.b64encode(secret.encode()).decode()}'
    assert scrub_text(text, secrets=[secret]) == '*** "***" ***'


def test_runner_secrets_are_the_token_and_actions_values_not_short_flags():
    env = {"INPUT_GITHUB_TOKEN": "ghs_abcdefgh12345", "ACTIONS_RUNTIME_TOKEN": "eyJ-runtime-0123",
           "ACTIONS_STEP_DEBUG": "true", "ACTIONS_CACHE_URL": "https://cache.example/abc/", "GITHUB_SHA": "a" * 40}
    assert runner_secrets(env, forge=GitHub(), tokens=GitHub().read_tokens(env)) == ["ghs_abcdefgh12345", "https://cache.example/abc/",
                                                            "eyJ-runtime-0123"]


# -- the gate a PR is judged by -------------------------------------------------------------------


def _settings(pr: str, *, fail_on_regression: str = ""):
    """ActionSettings as build_action_settings makes them: the PR's file with the inputs on top."""
    from retrieval_gate.publish.action_settings import ActionSettings, parse_inputs, suite_overrides

    inputs = parse_inputs({"INPUT_FAIL_ON_REGRESSION": fail_on_regression})
    suite = resolve_suite(parse_config(pr, source=Path("rg.yml")), suite="default", overrides=suite_overrides(inputs),
                          config_path=Path("retrieval-gate.yml"), env={})
    return ActionSettings(place=ForgeSettings(forge="github", event_name="pull_request"), inputs=inputs,
                          suite_config=suite,
                          baseline_path=suite.baseline or "baselines/default.json", out_dir=Path("out"))


BASE = ("suites:\n  default:\n    k: [1, 5, 10]\n    headline_k: 10\n    gate:\n      floors: {hit@5: 0.9}\n"
        "      max_drop: {'ndcg@10:locale=pt-BR': 0.05}\n")


def test_the_base_decides_floors_judged_rows_and_headline_k_and_the_pr_sees_each_change():
    from retrieval_gate.publish.base_gate import base_suite, change_note, judged_by

    settings = _settings("suites:\n  default:\n    k: [1, 5, 10]\n    headline_k: 1\n    baseline: mine.json\n")
    judged = judged_by(settings=settings, base=base_suite(BASE, settings=settings, ref="b" * 40),
                       base_has_config=True)
    config = judged.suite_config
    assert config.gate.floors == {"hit@5": 0.9} and config.gate.max_drop == {"ndcg@10:locale=pt-BR": 0.05}
    assert (config.headline_k, config.k, judged.baseline_path) == (10, (1, 5, 10), "baselines/default.json")
    assert [(c.key, c.base, c.proposed) for c in judged.changes] == [
        ("baseline", '"baselines/default.json"', '"mine.json"'),
        ("gate.floors.hit@5", "0.9", "(not set)"),
        ("gate.max_drop.ndcg@10:locale=pt-BR", "0.05", "(not set)"),
        ("headline_k", "10", "1"),
    ]
    note = change_note(judged, suite="default")
    assert note.count("\n> | ") == 1 + 4 and "applies after merge" in note  # the header and a row per change


def test_the_input_overrides_both_sides_and_is_no_change():
    from retrieval_gate.publish.base_gate import base_suite, judged_by

    settings = _settings(BASE, fail_on_regression="true")
    judged = judged_by(settings=settings, base=base_suite(BASE, settings=settings, ref="b" * 40),
                       base_has_config=True)
    assert judged.suite_config.gate.fail_on_regression is True and judged.changes == ()


def test_a_base_headline_k_the_pr_does_not_measure_is_noted_not_applied():
    from retrieval_gate.publish.base_gate import base_suite, judged_by

    settings = _settings("suites:\n  default:\n    k: [1, 5]\n")
    judged = judged_by(settings=settings, base=base_suite(BASE, settings=settings, ref="b" * 40),
                       base_has_config=True)
    assert judged.suite_config.headline_k is None
    assert judged.notes == ("the base's headline_k 10 is not one of this PR's cutoffs k [1, 5], so the PR's "
                            "headline_k (default) is used",)
