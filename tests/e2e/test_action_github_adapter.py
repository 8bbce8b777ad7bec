"""The PyGithub adapter against the fake GitHub API over HTTP: whose comments count as ours,
rate-limit retries, named errors, the 422 of a racing create, the token scrubbed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from retrieval_gate.errors import ConflictError, ForgeError, PermissionDenied
from retrieval_gate.forge.github.api import GitHubRepo
from retrieval_gate.publish.untrusted import scrub_text
from tests.e2e.fake_github import ACTIONS_BOT, HUMAN, FakeGitHub, serve_fake_github

PAT = "ghp_personalACCESStoken0123456789"
MARKER = "<!-- retrieval-gate:default -->"
ME = {"login": "release-bot", "id": 99, "type": "User"}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve_fake_github(token=PAT, user=ME) as fake:
        yield fake


def _repo(github: FakeGitHub, token: str = PAT) -> GitHubRepo:
    return GitHubRepo(token=SecretStr(token), scrub=masking(token),
                      repository=github.repository, api_url=github.api_url,
                      seconds_between_writes=None)


def test_with_a_personal_token_ours_means_the_tokens_user(github):
    github.add_comment(5, f"{MARKER}\nby the Actions bot", user=ACTIONS_BOT)
    mine = github.add_comment(5, f"{MARKER}\nby me", user=ME)
    posted = _repo(github).upsert_comment(number=5, marker=MARKER, body=f"{MARKER}\nnew")
    assert (posted.id, posted.created) == (mine["id"], False)
    assert [c["body"] for c in github.comments[5]] == [f"{MARKER}\nby the Actions bot", f"{MARKER}\nnew"]
    assert len(github.requests("GET", "^/user$")) == 1


def test_where_get_user_is_refused_ours_means_the_actions_bot(github):
    github.user = None  # GET /user → 403, as for installation tokens that do not look like one
    github.add_comment(5, f"{MARKER}\nby a human", user=HUMAN)
    bot = github.add_comment(5, f"{MARKER}\nby the Actions bot", user=ACTIONS_BOT)
    posted = _repo(github).upsert_comment(number=5, marker=MARKER, body=f"{MARKER}\nnew")
    assert posted.id == bot["id"] and github.comments[5][0]["body"] == f"{MARKER}\nby a human"


def test_installation_tokens_do_not_ask_get_user(github):
    github.token = "ghs_installationTOKEN"
    _repo(github, "ghs_installationTOKEN").upsert_comment(number=5, marker=MARKER, body=f"{MARKER}\nx")
    assert github.requests("GET", "^/user$") == []


def test_a_body_without_its_marker_is_refused(github):
    with pytest.raises(ValueError):
        _repo(github).upsert_comment(number=5, marker=MARKER, body="no marker")


@pytest.mark.parametrize(
    ("status", "body", "headers"),
    [
        (429, {"message": "Too many requests"}, {"Retry-After": "0"}),
        (403, {"message": "API rate limit exceeded for installation ID 1."},
         {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"}),  # reset in the past: retry now
        (502, {"message": "Bad gateway"}, {}),
    ],
)
def test_rate_limits_and_server_errors_are_retried(github, status, body, headers):
    github.commit("main", {"baselines/default.json": "{}\n"})
    github.fail("GET", "/contents/", status=status, body=body, headers=headers)
    remote = _repo(github).get_file(path="baselines/default.json", ref="main")
    assert remote is not None and remote.text == "{}\n"
    assert [r.status for r in github.requests("GET", "/contents/")] == [status, 200]


def test_server_errors_that_persist_become_a_github_error(github):
    github.fail("GET", "/contents/", status=503, times=20)
    repo = GitHubRepo(token=SecretStr(PAT), scrub=masking(PAT),
                      repository=github.repository, api_url=github.api_url,
                      retries=2, backoff_factor=0, seconds_between_writes=None)
    with pytest.raises(ForgeError, match=r"kept failing after retries \(too many 503 error responses\)") as caught:
        repo.get_file(path="x.json", ref="main")
    assert not isinstance(caught.value, PermissionDenied | ConflictError)
    assert len(github.requests("GET", "/contents/")) == 3  # the request and 2 retries


def test_a_permission_403_is_permission_denied_not_retried(github):
    github.fail("POST", "/comments", status=403, body={"message": "Resource not accessible by integration"})
    with pytest.raises(PermissionDenied, match="Resource not accessible by integration"):
        _repo(github).upsert_comment(number=5, marker=MARKER, body=MARKER)
    assert len(github.requests("POST")) == 1


def test_commit_files_writes_one_commit_on_the_head_and_moves_the_branch(github):
    github.commit("main", {"baselines/default.json": "old\n", "README.md": "# rag\n"})
    repo = _repo(github)
    head = repo.branch_head(branch="main")
    sha = repo.commit_files(branch="main", parent=head, message="m [skip ci]",
                            files={"baselines/default.json": "new\n", "baselines/default.audit.json": "{}\n"})
    assert github.branches["main"] == sha and github.parents[sha] == [head]
    assert github.file_at(sha, "baselines/default.json") == "new\n"
    assert github.file_at(sha, "baselines/default.audit.json") == "{}\n"
    assert github.file_at(sha, "README.md") == "# rag\n"  # the rest of the tree kept
    (update,) = github.requests("PATCH", "/git/refs/heads/main$")
    assert update.body == {"sha": sha, "force": False}


def test_a_branch_that_moved_before_the_commit_is_a_conflict_and_nothing_is_made(github):
    repo = _repo(github)
    head = repo.branch_head(branch="main")
    github.commit("main", {"baselines/default.json": "{\"theirs\": 1}\n"})  # the other merge wrote first
    with pytest.raises(ConflictError, match="main moved from"):
        repo.commit_files(branch="main", parent=head, files={"baselines/default.json": "{}\n"}, message="m")
    assert github.requests("POST", "/git/") == [] and github.requests("PATCH") == []


def test_a_branch_that_moves_during_the_commit_is_a_conflict_422(github):
    repo = _repo(github)
    head = repo.branch_head(branch="main")
    github.before("PATCH", "/git/refs/heads/main$", lambda: github.commit("main", {"b.json": "2\n"}))
    with pytest.raises(ConflictError, match="HTTP 422: Update is not a fast forward"):
        repo.commit_files(branch="main", parent=head, files={"b.json": "3\n"}, message="m")
    assert github.file_at("main", "b.json") == "2\n"  # theirs, not overwritten


def test_unreachable_api_is_a_github_error_without_the_token():
    repo = GitHubRepo(token=SecretStr(PAT), scrub=masking(PAT),
                      repository="acme/rag", api_url="http://127.0.0.1:9", retries=1,
                      backoff_factor=0, timeout=2, seconds_between_writes=None)
    with pytest.raises(ForgeError) as caught:
        repo.get_file(path="x", ref="main")
    assert "cannot reach the GitHub API" in str(caught.value) and PAT not in str(caught.value)


def test_error_messages_are_scrubbed(github):
    github.fail("GET", "/pulls/", status=404, body={"message": f"no PR for {PAT}"})
    with pytest.raises(ForgeError) as caught:
        _repo(github).get_pull(number=1)
    assert PAT not in str(caught.value) and "***" in str(caught.value)


def test_the_adapter_scrubs_with_the_one_scrubber_the_secret_and_its_base64_form():
    assert scrub_text("token abc and YWJj", secrets=["abc"]) == "token *** and ***"
    assert scrub_text("nothing", secrets=[""]) == "nothing"


def masking(*secrets: object) -> object:
    """The adapter's scrubber: the one scrubber (``scrub_text``) over these secrets."""
    values = [s.get_secret_value() if hasattr(s, "get_secret_value") else str(s) for s in secrets]
    return lambda text: scrub_text(text, secrets=values)


def test_the_action_pauses_a_second_between_writes_as_github_advises(github):
    """PyGithub's pause before a mutating request (secondary rate limits): one second in the
    action's adapter; only the end-to-end harness, against the local fake, sets it to None."""
    from retrieval_gate.forge.github import GitHub, api

    assert api.SECONDS_BETWEEN_WRITES == 1.0
    env = {"GITHUB_REPOSITORY": github.repository, "GITHUB_API_URL": github.api_url,
           "INPUT_GITHUB_TOKEN": PAT}
    forge = GitHub()
    adapter = forge.api(forge.read_settings(env, tokens=forge.read_tokens(env)), scrub=masking(PAT), log=print)
    assert adapter.seconds_between_writes == 1.0


def test_where_get_user_is_refused_a_human_s_marker_is_not_adopted(github):
    github.user = None  # GET /user → 403: ours is then only the Bot github-actions[bot]
    fake = github.add_comment(5, f"{MARKER}\nNo regression.", user=HUMAN)
    lookalike = github.add_comment(5, f"{MARKER}\nNo regression.", user={**ACTIONS_BOT, "type": "User"})
    posted = _repo(github).upsert_comment(number=5, marker=MARKER, body=f"{MARKER}\nours")
    assert posted.created and posted.id not in (fake["id"], lookalike["id"])
    assert [c["body"] for c in github.comments[5]] == [f"{MARKER}\nNo regression."] * 2 + [f"{MARKER}\nours"]
    assert github.requests("PATCH") == []
