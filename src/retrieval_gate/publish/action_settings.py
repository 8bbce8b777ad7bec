"""The action's settings, read ONCE from the runner's environment into one typed object.

``runner_environment`` reads the environment once (through ``environment.py``, the one module that
touches ``os.environ``; the CLI's commands take
flags, and ``eval`` gets from it only the variables the config's ``http_headers`` name;
``settings.py`` reads the config file). Inputs reach a Docker
action as ``INPUT_<NAME>`` (the input name upper-cased; names use underscores because Docker
actions do not receive inputs whose names contain hyphens, github/docs#32671). The suite's
configuration comes from the config file (``settings.load_config``) with the inputs on top
(``settings.resolve_suite``), exactly as flags override it on the command line.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from retrieval_gate.environment import onnx_export_root, read_environment
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.files import ReadRefused, decode_text, read_bounded
from retrieval_gate.load import boundary
from retrieval_gate.overrides import GateOverrides, StoreOverrides, SuiteOverrides
from retrieval_gate.publish.modes import MODES, Mode, is_privileged
from retrieval_gate.publish.untrusted import (
    CONFIG_MAX_BYTES,
    EVENT_MAX_BYTES,
    MIN_SECRET_CHARS,
    confine_paths,
    read_confined,
)
from retrieval_gate.settings import (
    DEFAULT_BASELINE_DIR,
    DEFAULT_CONFIG_NAME,
    ConfigFile,
    SuiteConfig,
    load_config,
    parse_config,
    resolve_suite,
    suite_baseline_path,
    suite_name_problem,
)

DEFAULT_OUT_DIR = "retrieval-gate-out"

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ActionInputs(_Frozen):
    """The action's inputs (action.yml), after parsing. Empty strings mean "not set"."""

    github_token: SecretStr = SecretStr("")
    config: str | None = None
    suite: str = "default"
    kb: str | None = None
    cases: str | None = None
    k: str | None = None
    model: str | None = None
    store: str | None = None
    baseline_dir: str = DEFAULT_BASELINE_DIR
    mode: Mode = Mode.AUTO
    fail_on_regression: bool | None = None  # None: the config file decides (default off)
    comment: bool = True
    audit: bool = True  # the golden-set audit: written beside the baseline on refresh, diffed in the PR comment
    base_ref: str | None = None
    pr_number: int | None = None
    results_file: str | None = None  # comment / write-baseline: results.json of another job's run
    comparison_file: str | None = None  # comment: comparison.json of the fork's run
    out_dir: str = DEFAULT_OUT_DIR


# The input names, in action.yml's order; tests check action.yml declares exactly these.
INPUT_NAMES: tuple[str, ...] = tuple(ActionInputs.model_fields)
# Inputs of earlier releases: action.yml no longer declares them, and a workflow that still passes
# one (the runner hands it on, with a warning) is refused with the reason, never silently ignored.
RETIRED_INPUTS = {
    "comment_file": "mode comment no longer posts a Markdown file (comment_file): it renders the comment itself "
                    "from the fork run's data; pass results_file (and comparison_file) instead",
}


class ActionSettings(_Frozen):
    """Everything the flows need to know about this run."""

    event_name: str
    event: dict[str, Any] = Field(default_factory=dict)
    repository: str = ""
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    sha: str = ""
    ref: str = ""
    run_id: str = ""
    output_file: Path | None = None
    summary_file: Path | None = None
    inputs: ActionInputs
    suite_config: SuiteConfig
    baseline_path: str  # repository path, forward slashes, e.g. baselines/default.json
    out_dir: Path  # relative to the workspace unless given absolute
    workspace: Path = Path(".")
    config_repo_path: str | None = DEFAULT_CONFIG_NAME  # the config's path in the repository (None: outside it)
    secrets: tuple[SecretStr, ...] = ()  # scrubbed from everything posted or written
    forge: Literal["github", "gitlab"] = "github"  # whose API the flows call (publish.gitlab_settings)
    pipeline_url: str | None = None  # GitLab's CI_PIPELINE_URL (GitHub's run URL is built from its parts)

    @property
    def token(self) -> SecretStr:
        return self.inputs.github_token

    @property
    def secret_values(self) -> list[str]:
        """The token, every ACTIONS_* value, and the config's environment-sourced header values."""
        return [secret.get_secret_value() for secret in self.secrets]

    @property
    def pull_request(self) -> dict[str, Any]:
        value = self.event.get("pull_request")
        return value if isinstance(value, dict) else {}

    @property
    def pr_number(self) -> int | None:
        """The PR of a pull_request event, else the ``pr_number`` input."""
        number = self.pull_request.get("number")
        if isinstance(number, int):
            return number
        return self.inputs.pr_number

    @property
    def base_sha(self) -> str | None:
        """The PR's base commit, from the event payload (never from the checkout)."""
        sha = (self.pull_request.get("base") or {}).get("sha")
        return str(sha) if sha else None

    @property
    def is_fork(self) -> bool:
        head_repo = ((self.pull_request.get("head") or {}).get("repo") or {}).get("full_name")
        return bool(head_repo) and head_repo != self.repository

    @property
    def default_branch(self) -> str | None:
        repo = self.event.get("repository")
        value = repo.get("default_branch") if isinstance(repo, dict) else None
        return str(value) if value else None

    @property
    def branch(self) -> str | None:
        """The branch of GITHUB_REF (``refs/heads/<branch>``), else None (tags, PR merge refs)."""
        return self.ref.removeprefix("refs/heads/") if self.ref.startswith("refs/heads/") else None

    @property
    def run_url(self) -> str | None:
        if self.pipeline_url:
            return self.pipeline_url
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"

    @property
    def workflow_run(self) -> dict[str, Any]:
        value = self.event.get("workflow_run")
        return value if isinstance(value, dict) else {}

    @property
    def workflow_run_head_sha(self) -> str | None:
        sha = self.workflow_run.get("head_sha")
        return str(sha) if isinstance(sha, str) and sha else None

    @property
    def workflow_run_head_repo(self) -> str | None:
        """``workflow_run.head_repository.full_name``: the repository the run's head commit is in."""
        repo = self.workflow_run.get("head_repository")
        name = repo.get("full_name") if isinstance(repo, dict) else None
        return str(name) if isinstance(name, str) and name else None


def runner_environment() -> dict[str, str]:
    """The process environment (``environment.read_environment``) — the runner's for the action,
    and for ``eval`` the variables its ``http_headers`` name."""
    return read_environment()


def github_token(env: Mapping[str, str]) -> SecretStr:
    """The ``github_token`` input (empty when not set), as the one type a secret is held in. The
    entry point (``cli/action.py``) reads it once and hands it to the settings and to the
    scrubbing of anything printed even when the settings cannot be built."""
    return SecretStr((env.get("INPUT_GITHUB_TOKEN") or "").strip())


def runner_secrets(env: Mapping[str, str], *, token: SecretStr) -> list[str]:
    """What must never be posted or written: the token and every ``ACTIONS_*`` value (the
    runtime token, the OIDC request token, cache and results URLs), except short flag values
    (``ACTIONS_STEP_DEBUG=true``) that are no secret and would garble every text they occur in."""
    values = [token.get_secret_value()]
    values += [value.strip() for key, value in sorted(env.items()) if key.startswith("ACTIONS_")]
    return [value for value in dict.fromkeys(values) if len(value) >= MIN_SECRET_CHARS]


def workspace_of(env: Mapping[str, str]) -> Path:
    """GITHUB_WORKSPACE (the checkout; a Docker action's working directory), else the current folder."""
    return Path(env.get("GITHUB_WORKSPACE") or ".")


def build_action_settings(env: Mapping[str, str], *, token: SecretStr,
                          event: dict[str, Any] | None = None, forge: Literal["github", "gitlab"] = "github",
                          pipeline_url: str | None = None) -> ActionSettings:
    """The runner's environment → ActionSettings. Relative paths (config, kb, cases, store,
    out_dir) are relative to the working directory, which the caller sets to the workspace first
    (as the runner does for a Docker action), so they mean what they mean in a local run.
    ``token``: the ``github_token`` input as the entry point read it (``github_token``, once).
    ``event``: the event payload when it is not a file (GitLab's, from ``publish.gitlab_settings``)."""
    inputs = parse_inputs(env, token=token)
    workspace = workspace_of(env)
    event = _read_event(env.get("GITHUB_EVENT_PATH")) if event is None else event
    config_path = Path(inputs.config) if inputs.config is not None else None
    # Paths stay inside the workspace: the inputs' before anything is read, the suite's after.
    confine_paths(workspace=workspace, paths={"input config": inputs.config, "input out_dir": inputs.out_dir})
    if is_privileged(requested=inputs.mode, event_name=env.get("GITHUB_EVENT_NAME", "")):
        config_file, found = _load_config_confined(config_path, workspace=workspace)
    else:
        config_file, found = load_config(config_path, required=config_path is not None)
    suite_config = resolve_suite(config_file, suite=inputs.suite, overrides=suite_overrides(inputs), config_path=found,
                                 env=env, embed_exports=onnx_export_root(env))
    secrets = runner_secrets(env, token=token) + [v for v in suite_config.env_secrets if len(v) >= MIN_SECRET_CHARS]
    # The data files of the privileged modes (results_file, comparison_file) are read through
    # publish.untrusted.read_confined, which refuses links and paths outside the workspace itself.
    confine_paths(workspace=workspace, paths={
        "kb": suite_config.kb, "cases": suite_config.cases, "store path": suite_config.store.path})
    return ActionSettings(
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        event=event,
        repository=env.get("GITHUB_REPOSITORY", ""),
        api_url=_url("GITHUB_API_URL", env.get("GITHUB_API_URL") or "https://api.github.com"),
        server_url=_url("GITHUB_SERVER_URL", env.get("GITHUB_SERVER_URL") or "https://github.com"),
        sha=env.get("GITHUB_SHA", ""),
        ref=env.get("GITHUB_REF", ""),
        run_id=env.get("GITHUB_RUN_ID", ""),
        output_file=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
        summary_file=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None,
        inputs=inputs,
        suite_config=suite_config,
        baseline_path=baseline_repo_path(suite_config=suite_config, inputs=inputs, workspace=workspace),
        out_dir=Path(inputs.out_dir),
        workspace=workspace,
        config_repo_path=_config_repo_path(inputs.config, workspace=workspace),
        secrets=tuple(SecretStr(v) for v in dict.fromkeys(secrets)),
        forge=forge,
        pipeline_url=pipeline_url,
    )


def _load_config_confined(path: Path | None, *, workspace: Path) -> tuple[ConfigFile, Path | None]:
    """The config file as a privileged mode reads it: a regular file inside the workspace, no
    symlink followed, at most 1 MiB (``publish.untrusted``); absent → the defaults."""
    candidate = path if path is not None else Path(DEFAULT_CONFIG_NAME)
    if path is None and not os.path.lexists(candidate):
        return ConfigFile(), None
    raw = read_confined(candidate, workspace=workspace, max_bytes=CONFIG_MAX_BYTES, what="config")
    try:
        text = decode_text(raw)
    except ReadRefused as exc:
        raise InputError(Problem(str(candidate), None, exc.reason)) from None
    return parse_config(text, source=candidate), candidate


def parse_inputs(env: Mapping[str, str], *, token: SecretStr) -> ActionInputs:
    """``INPUT_*`` → ActionInputs. Blank values are "not set"; booleans accept true/false,
    yes/no, on/off, 1/0."""

    def get(name: str) -> str | None:
        value = env.get(f"INPUT_{name.upper()}")
        value = value.strip() if value is not None else None
        return value or None

    for name, why in RETIRED_INPUTS.items():
        if get(name) is not None:
            raise UsageError(f"input {name}: {why}")
    data: dict[str, Any] = {}
    for name in ("config", "kb", "cases", "k", "model", "store", "base_ref", "results_file",
                 "comparison_file"):
        data[name] = get(name)
    for name, default in (("suite", "default"), ("baseline_dir", DEFAULT_BASELINE_DIR), ("out_dir", DEFAULT_OUT_DIR)):
        data[name] = get(name) or default
    data["github_token"] = token
    mode = (get("mode") or Mode.AUTO).lower()
    if mode not in MODES:
        raise UsageError(f"input mode: must be one of {', '.join(MODES)} (got {mode!r})")
    data["mode"] = Mode(mode)
    data["fail_on_regression"] = _bool("fail_on_regression", get("fail_on_regression"), None)
    data["comment"] = _bool("comment", get("comment"), True)
    data["audit"] = _bool("audit", get("audit"), True)
    pr = get("pr_number")
    if pr is not None:
        if not re.fullmatch(r"[0-9]{1,10}", pr.lstrip("#")):  # ASCII digits only; no 5,000-digit int()
            raise UsageError(f"input pr_number: must be a pull request number (got {pr[:40]!r})")
        data["pr_number"] = int(pr.lstrip("#"))
    suite = data["suite"]
    if (why := suite_name_problem(suite)) is not None:
        raise UsageError(f"input suite: {suite!r} {why}")
    return ActionInputs(**data)


def suite_overrides(inputs: ActionInputs) -> SuiteOverrides:
    """The inputs that override the config file, as flags do (None = keep)."""
    return SuiteOverrides(kb=inputs.kb, cases=inputs.cases, k=inputs.k, model=inputs.model,
                          store=StoreOverrides(path=inputs.store),
                          gate=GateOverrides(fail_on_regression=inputs.fail_on_regression))


def baseline_repo_path(*, suite_config: SuiteConfig, inputs: ActionInputs, workspace: Path) -> str:
    """The baseline's path inside the repository: the config's ``baseline`` when set, else
    ``<baseline_dir>/<suite>.json``. Normalised to forward slashes; must stay inside the repo."""
    raw = suite_config.baseline or suite_baseline_path(suite=inputs.suite, folder=inputs.baseline_dir)
    return repo_path(raw, workspace=workspace, what="baseline")


def _config_repo_path(config: str | None, *, workspace: Path) -> str | None:
    """The config file's path in the repository, or None for one outside it (a local run)."""
    try:
        return repo_path(config or DEFAULT_CONFIG_NAME, workspace=workspace, what="config")
    except UsageError:
        return None


def repo_path(raw: str, *, workspace: Path, what: str) -> str:
    """A workspace path as a path inside the repository: forward slashes, normalised; refused
    when it leads out of the repository."""
    path = Path(raw)
    if path.is_absolute():
        try:
            path = path.relative_to(workspace.resolve())
        except ValueError:
            raise UsageError(f"{what} path {raw} is outside the workspace {workspace}") from None
    clean = posixpath.normpath(path.as_posix())
    if clean in (".", "") or clean.startswith("../") or clean == "..":
        raise UsageError(f"{what} path {raw} must be a file inside the repository")
    return clean


def _bool(name: str, value: str | None, default: bool | None) -> bool | None:
    if value is None:
        return default
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise UsageError(f"input {name}: must be true or false (got {value!r})")


def _url(name: str, value: str) -> str:
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


def _read_event(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        text = decode_text(read_bounded(Path(path), max_bytes=EVENT_MAX_BYTES))
        data = boundary.loads(text)  # the input limits: depth, number range, duplicate keys, UTF-8 strings
    except ReadRefused as exc:
        raise InputError(Problem(path, None, f"cannot read the event payload: {exc.reason}")) from None
    except json.JSONDecodeError as exc:
        raise InputError(Problem(path, exc.lineno, f"event payload is not JSON: {exc.msg}")) from None
    except boundary.JsonRefused as exc:
        line = boundary.line_of(text, needle=exc.needle)
        raise InputError(Problem(path, line, f"event payload: {exc.message}")) from None
    if not isinstance(data, dict):
        raise InputError(Problem(path, 1, "event payload is not a JSON object"))
    return data
