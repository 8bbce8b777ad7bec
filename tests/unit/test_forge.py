"""The forge interface (``forge/``): each forge detected from its own variables, its settings read
into the one typed model, its secrets, its limits and words; the escaping every forge's text needs
(``render.escape``). Pure: no network (the adapters run against fake APIs in tests/e2e)."""

from __future__ import annotations

import pytest

from retrieval_gate.forge import FORGES, detect_forge, forge_named
from retrieval_gate.forge.base import ForgeSettings, Tokens
from retrieval_gate.forge.gitlab.settings import NOTE_TOKEN_VARIABLE, WRITE_TOKEN_VARIABLE
from retrieval_gate.render.escape import ZWJ, escape_terminal, md_text
from retrieval_gate.render.limits import DEFAULT_COMMENT_CHARS


def _mr_env(**extra: str) -> dict[str, str]:
    return {"GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_IID": "42",
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": "b" * 40, "CI_PROJECT_PATH": "someone/rag",
            "CI_MERGE_REQUEST_PROJECT_PATH": "acme/rag", "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "someone/rag",
            "CI_DEFAULT_BRANCH": "main", "CI_COMMIT_SHA": "c" * 40, "CI_API_V4_URL": "https://gl.example/api/v4",
            "CI_SERVER_URL": "https://gl.example", "CI_PROJECT_DIR": "/builds/acme/rag",
            "CI_JOB_TOKEN": "job-token-secret", "GITHUB_TOKEN": "stale", NOTE_TOKEN_VARIABLE: "glpat-note-123456",
            **extra}


def test_each_forge_is_detected_from_its_own_variables_and_github_is_the_default() -> None:
    assert detect_forge({"GITLAB_CI": "true", "GITHUB_ACTIONS": "true"}).name == "gitlab"
    assert detect_forge({"GITHUB_ACTIONS": "true"}).name == "github"
    assert detect_forge({}).name == "github"  # a local run of the entry point
    assert detect_forge({"GITLAB_CI": "false"}).name == "github"
    assert [forge_named(f.name) for f in FORGES] == list(FORGES)


def test_a_merge_request_pipeline_reads_as_a_pull_request_against_the_target_project() -> None:
    forge = forge_named("gitlab")
    env = _mr_env()
    place = forge.read_settings(env, tokens=forge.read_tokens(env))
    assert isinstance(place, ForgeSettings)
    assert (place.event_name, place.repository, place.pr_number, place.base_sha) == (
        "pull_request", "acme/rag", 42, "b" * 40)  # the target project: its base judges
    assert place.verify_base and place.is_fork and place.default_branch == "main"
    assert str(place.workspace) == "/builds/acme/rag"
    assert place.comment_token.get_secret_value() == "glpat-note-123456" and not place.holds_write_token
    assert forge.blob_url(place, ref="main", path="b.json") == "https://gl.example/acme/rag/-/blob/main/b.json"


@pytest.mark.parametrize(("source", "event"), [("push", "push"), ("web", "workflow_dispatch"),
                                               ("api", "workflow_dispatch"), ("schedule", "schedule")])
def test_other_pipeline_sources(source: str, event: str) -> None:
    forge = forge_named("gitlab")
    env = _mr_env(CI_PIPELINE_SOURCE=source, CI_COMMIT_BRANCH="main")
    place = forge.read_settings(env, tokens=forge.read_tokens(env))
    assert (place.event_name, place.ref, place.branch, place.pr_number) == (event, "refs/heads/main", "main", None)


def test_a_merge_request_iid_that_is_not_a_number_is_no_pull_request() -> None:
    forge = forge_named("gitlab")
    env = _mr_env(CI_MERGE_REQUEST_IID="1" * 5000)
    assert forge.read_settings(env, tokens=forge.read_tokens(env)).pr_number is None


def test_gitlabs_secrets_are_both_tokens_and_its_secret_variables() -> None:
    forge = forge_named("gitlab")
    env = _mr_env(**{WRITE_TOKEN_VARIABLE: "glpat-write-123456", "CI_REGISTRY_PASSWORD": "registry-pass-1"})
    tokens = forge.read_tokens(env)
    assert tokens.holds_write_token and tokens.write_variable == WRITE_TOKEN_VARIABLE
    assert sorted(forge.secret_values(env, tokens=tokens)) == sorted(
        ["glpat-note-123456", "glpat-write-123456", "job-token-secret", "registry-pass-1"])
    github = forge_named("github")
    gh_env = {"INPUT_GITHUB_TOKEN": "ghs_abc", "ACTIONS_RUNTIME_TOKEN": "rt"}
    gh_tokens = github.read_tokens(gh_env)
    assert not gh_tokens.holds_write_token  # GitHub: the workflow's permissions say what the token reaches
    assert github.secret_values(gh_env, tokens=gh_tokens) == ["ghs_abc", "rt"]


def test_every_forge_has_its_limits_words_and_the_default_comment_fits_all() -> None:
    for forge in FORGES:
        assert forge.limits.comment_aim < forge.limits.comment_chars
        assert forge.limits.comment_aim >= DEFAULT_COMMENT_CHARS, forge.name
        assert forge.words.ref(7).endswith("7") and "{file}" in forge.words.no_comment
    assert forge_named("gitlab").words.ref(7) == "!7" and forge_named("github").words.ref(7) == "#7"
    assert [f.name for f in FORGES if f.workflow_commands] == ["github"]


def test_tokens_without_a_separate_write_variable_hold_no_write_token() -> None:
    from pydantic import SecretStr

    assert not Tokens(comment=SecretStr("x"), write=SecretStr("x")).holds_write_token


@pytest.mark.parametrize("text", ["@_user", "@.user", "!12", "&7", "~label", '~"two words"', "%v1", "$12", "#123",
                                  "@<6a1b-2c>", "@alice"])
def test_references_of_every_forge_are_broken_and_read_the_same(text: str) -> None:
    out = str(md_text(f"see {text} now"))
    assert ZWJ in out
    decoded = (out.replace(ZWJ, "").replace("&#95;", "_").replace("&amp;", "&").replace("&#126;", "~")
               .replace("&#36;", "$").replace("&lt;", "<").replace("&gt;", ">"))
    assert decoded == f"see {text} now"  # only an invisible character added


@pytest.mark.parametrize("text", ["a@b.c", "x!y", "50%", "100$", "~ alone", "3 & 4"])
def test_text_that_is_no_reference_is_left_alone(text: str) -> None:
    assert ZWJ not in str(md_text(text))


@pytest.mark.parametrize(("line", "shown_as"), [
    ("##vso[task.setvariable variable=X]1", "##vso%5Btask.setvariable variable=X]1"),
    ("case q1 ##VSO[task.uploadfile]/etc/passwd", "case q1 ##VSO%5Btask.uploadfile]/etc/passwd"),
    ("##[error]not ours", "##%5Berror]not ours"),
    ("::error::x", "%3A:error::x")])
def test_runner_commands_of_every_forge_are_neutralised_in_the_log(line: str, shown_as: str) -> None:
    assert escape_terminal(line) == shown_as
