"""The ``Forge`` interface: what the action's flows need from a code host, written once.

A forge (``forge/<name>/``: one folder each) says

- whether this process runs in one of its pipelines (``detect``, from the environment the entry
  point read: ``environment.py`` is the one reader);
- its tokens (``read_tokens``: the entry point reads them once) and which of its variables are
  secrets (``secret_values``: scrubbed from everything posted, written or printed);
- its settings, read once into a typed model (``read_settings`` → a ``ForgeSettings``);
- its API adapter (``api`` → a ``ForgeApi``: files at a commit, the one-commit refresh with its
  concurrency check, the comment / note / thread upsert by marker, a pull request's commits);
- its size limits (``limits``), its URLs (``blob_url``), whether its log takes runner commands
  (``workflow_commands``: GitHub's ``::warning``; elsewhere plain lines, every one through
  ``render.escape.escape_terminal``), and its own words (``words``: "merge request !7", "thread", …);
- the pipeline file ``init --ci <name>`` writes (``pipeline``), when it is not GitHub's workflows.

The flows (``publish/``) call only this interface; ``forge/__init__.py`` is the registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from retrieval_gate.errors import UsageError


@dataclass(frozen=True)
class RemoteFile:
    path: str
    text: str
    sha: str  # the forge's id of the file's content (blob sha / object id)


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_sha: str
    base_sha: str
    base_ref: str
    head_repo: str  # the head's repository (differs from ours for a fork)


@dataclass(frozen=True)
class PostedComment:
    id: int | str
    url: str  # for the ``comment_url`` output
    created: bool  # False when the existing comment / note / thread was edited


class ForgeApi(Protocol):
    """What the flows call on a forge (each ``forge/*/api.py`` implements it)."""

    def default_branch(self) -> str: ...

    def get_file(self, *, path: str, ref: str) -> RemoteFile | None: ...

    def branch_head(self, *, branch: str) -> str: ...

    def commit_files(self, *, branch: str, parent: str, files: Mapping[str, str], message: str) -> str: ...

    def upsert_comment(self, *, number: int, marker: str, body: str) -> PostedComment: ...

    def get_pull(self, *, number: int) -> PullInfo: ...


@dataclass(frozen=True)
class Tokens:
    """The tokens a job holds, as the entry point read them. ``comment`` posts the comment (and
    reads); ``write`` moves the default branch. On GitHub they are one token, whose reach the
    workflow's ``permissions:`` set; GitLab and Azure DevOps hold them in separate variables, and
    ``write`` is only ever present in the refresh job, which runs no evaluation."""

    comment: SecretStr
    write: SecretStr
    write_variable: str | None = None  # the variable ``write`` came from, when it is a separate one

    @property
    def holds_write_token(self) -> bool:
        return self.write_variable is not None and bool(self.write.get_secret_value())


@dataclass(frozen=True)
class Words:
    """How a forge names things in its logs and comments."""

    change: str  # "pull request", "merge request"
    comment: str  # "comment", "note", "thread"
    sigil: str  # "#", "!"
    no_comment: str  # what the job did instead when it could not comment, and how to post it
    summary: str  # where the report is shown: "the job summary", "the job's artifacts"
    fork: str  # why a change from a fork could not be commented on
    run_link: str = "pipeline"  # the label of the run's link in the report ("workflow run", "pipeline")

    def ref(self, number: int | None) -> str:
        return f"{self.sigil}{number}"


@dataclass(frozen=True)
class Limits:
    comment_chars: int  # the forge's hard limit on one comment / note / thread comment
    comment_aim: int  # what the comment renderer aims for (room for the cut notice)
    summary_bytes: int | None = None  # the job summary's limit (None: the forge has no job summary)


class ForgeSettings(BaseModel):
    """One run's place on its forge, read once from the environment (``Forge.read_settings``).
    ``event_name`` uses the modes' vocabulary (``publish/modes.py``): ``pull_request``, ``push``,
    ``workflow_dispatch``, ``workflow_run``, or the forge's own name of any other trigger."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    forge: str
    event_name: str
    repository: str = ""  # owner/name, group/project, organization/project/repository
    api_url: str = ""
    server_url: str = ""
    sha: str = ""
    commit_message: str = ""  # the message of the commit at ``sha``, as the forge states it ("" when it does not)
    ref: str = ""  # recorded in the baseline's history (refs/heads/main)
    branch: str | None = None  # the branch this run is on, if any
    run_url: str | None = None
    default_branch: str | None = None
    pr_number: int | None = None  # the pull / merge request this run is for, from the forge itself
    base_sha: str | None = None  # the base commit as the environment states it
    verify_base: bool = False  # True: the environment's base is checked against the API (an overridable variable)
    is_fork: bool = False
    workspace: Path = Path(".")
    output_file: Path | None = None
    summary_file: Path | None = None
    relayed_head_sha: str | None = None  # ``comment`` mode: the head commit of the run whose data is posted
    relayed_head_repo: str | None = None
    relayed_run_url: str | None = None
    tokens: tuple[SecretStr, SecretStr] = (SecretStr(""), SecretStr(""))  # (comment, write)
    write_variable: str | None = None

    @property
    def comment_token(self) -> SecretStr:
        return self.tokens[0]

    @property
    def write_token(self) -> SecretStr:
        return self.tokens[1]

    @property
    def holds_write_token(self) -> bool:
        return self.write_variable is not None and bool(self.write_token.get_secret_value())


class SettingsModule(Protocol):
    """What a forge's ``settings.py`` holds: its one reader of the tokens and of the run's place."""

    def read_tokens(self, env: Mapping[str, str]) -> Tokens: ...

    def secret_values(self, env: Mapping[str, str], *, tokens: Tokens) -> list[str]: ...

    def workspace(self, env: Mapping[str, str]) -> Path: ...

    def read_settings(self, env: Mapping[str, str], *, tokens: Tokens) -> ForgeSettings: ...


@dataclass(frozen=True)
class Pipeline:
    """The file ``retrieval-gate init --ci <forge>`` writes: the forge's pipeline, which pins the
    retrieval-gate image by its digest (``--image``). ``text`` takes the keywords ``image``, ``suite``,
    ``branch``, ``kb`` and ``kb_is_file`` and returns the file's text (pure)."""

    path: str  # where it goes in the repository: .gitlab-ci.yml, azure-pipelines.yml, …
    text: Callable[..., str]


class Forge(ABC):
    """One forge. Subclasses are stateless; ``forge/__init__.py:FORGES`` holds one of each. What the
    environment says (tokens, secrets, the run's place) is read by its ``settings_module``
    (``forge/<name>/settings.py``), to which the four readers below delegate."""

    name: ClassVar[str]  # its folder under forge/ and its ``--ci`` name
    title: ClassVar[str]  # "GitHub", "GitLab", "Azure DevOps"
    words: ClassVar[Words]
    limits: ClassVar[Limits]
    settings_module: ClassVar[SettingsModule]  # the forge's ``settings.py``
    workflow_commands: ClassVar[bool] = False  # the runner obeys ``::warning`` lines (GitHub only)
    # The variables that hold the forge's tokens and secrets (and prefixes of whole families of
    # them): never sent anywhere by the tool (``options.http_headers`` may not name them).
    secret_variables: ClassVar[tuple[str, ...]] = ()
    secret_prefixes: ClassVar[tuple[str, ...]] = ()
    token_variables: ClassVar[tuple[str, ...]] = ()  # the variables ``settings.read_tokens`` reads, and only it
    variable_prefixes: ClassVar[tuple[str, ...]] = ()  # the families of variables its runner sets (and its tokens')
    action_inputs: ClassVar[tuple[str, ...]] = ()  # action.yml inputs that are the forge's, not the flows'
    pipeline: ClassVar[Pipeline | None] = None  # what ``init --ci <name>`` writes (None: GitHub's two workflows)

    def pull_page(self, *, host: str, path: str) -> str | None:
        """The web page pattern of a pull / merge request (``{n}``: its number) of the repository
        at ``host``/``path`` of its git remote, or None when the host is not this forge's."""
        return None

    @abstractmethod
    def detect(self, env: Mapping[str, str]) -> bool:
        """Whether ``env`` is one of this forge's pipelines."""

    def read_tokens(self, env: Mapping[str, str]) -> Tokens:
        """The job's tokens (empty when absent); the entry point calls this once."""
        return self.settings_module.read_tokens(env)

    def secret_values(self, env: Mapping[str, str], *, tokens: Tokens) -> list[str]:
        """Every value of ``env`` that is a secret: the tokens and the forge's secret variables."""
        return self.settings_module.secret_values(env, tokens=tokens)

    def workspace(self, env: Mapping[str, str]) -> Path:
        """The checkout the job runs in."""
        return self.settings_module.workspace(env)

    def read_settings(self, env: Mapping[str, str], *, tokens: Tokens) -> ForgeSettings:
        """The run's place, read once."""
        return self.settings_module.read_settings(env, tokens=tokens)

    @abstractmethod
    def api(self, settings: ForgeSettings, *, scrub: Callable[[str], str],
            log: Callable[[str], None]) -> ForgeApi:
        """The API adapter, authenticated with the settings' tokens; ``scrub`` masks the secrets
        in its messages, ``log`` writes one escaped log line."""

    @abstractmethod
    def blob_url(self, settings: ForgeSettings, *, ref: str, path: str) -> str:
        """The web page of ``path`` at ``ref``."""

    def outside_note(self, env: Mapping[str, str]) -> str | None:
        """A line to print when the entry point runs outside this forge's runner, else None."""
        return None


def http_url(name: str, *, value: str) -> str:
    """An http(s) URL with a host, as the runner sets it; anything else is a usage error naming
    the variable (never a crash inside the HTTP client)."""
    try:
        parts = urlsplit(value)
        _ = parts.port  # a port that is not a number raises ValueError
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise UsageError(f"{name}: {value[:80]!r} is not an http(s) URL with a host")
    return value


def small_int(value: str | None) -> int | None:
    """A pull request's number from a variable: ASCII digits only, at most 12 of them."""
    text = (value or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None
