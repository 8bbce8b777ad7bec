"""The action's settings, read ONCE from the runner's environment into one typed object.

``runner_environment`` is the one read of ``os.environ`` in the package (the CLI's commands take
flags; ``settings.py`` reads the config file). Inputs reach a Docker
action as ``INPUT_<NAME>`` (the input name upper-cased; names use underscores because Docker
actions do not receive inputs whose names contain hyphens, github/docs#32671). The suite's
configuration comes from the config file (``settings.load_config``) with the inputs on top
(``settings.resolve_suite``), exactly as flags override it on the command line.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.settings import SuiteConfig, load_config, resolve_suite

Mode = Literal["auto", "pr", "update-baseline", "report", "comment"]
MODES: tuple[str, ...] = get_args(Mode)
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
    baseline_dir: str = "baselines"
    mode: Mode = "auto"
    fail_on_regression: bool | None = None  # None: the config file decides (default off)
    comment: bool = True
    base_ref: str | None = None
    pr_number: int | None = None
    comment_file: str | None = None
    out_dir: str = DEFAULT_OUT_DIR


# The input names, in action.yml's order; tests check action.yml declares exactly these.
INPUT_NAMES: tuple[str, ...] = tuple(ActionInputs.model_fields)


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

    @property
    def token(self) -> str:
        return self.inputs.github_token.get_secret_value()

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
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"

    @property
    def workflow_run_head_sha(self) -> str | None:
        run = self.event.get("workflow_run")
        sha = run.get("head_sha") if isinstance(run, dict) else None
        return str(sha) if sha else None


def runner_environment() -> dict[str, str]:
    """A copy of the runner's environment: the one read of ``os.environ`` for the action."""
    return dict(os.environ)


def github_token(env: Mapping[str, str]) -> str:
    """The ``github_token`` input ("" when not set): read here only, for the settings and for
    scrubbing it from anything printed even when the settings cannot be built."""
    return (env.get("INPUT_GITHUB_TOKEN") or "").strip()


def workspace_of(env: Mapping[str, str]) -> Path:
    """GITHUB_WORKSPACE (the checkout; a Docker action's working directory), else the current folder."""
    return Path(env.get("GITHUB_WORKSPACE") or ".")


def build_action_settings(env: Mapping[str, str]) -> ActionSettings:
    """The runner's environment → ActionSettings. Relative paths (config, kb, cases, store,
    out_dir) are relative to the working directory, which the caller sets to the workspace first
    (as the runner does for a Docker action), so they mean what they mean in a local run."""
    inputs = parse_inputs(env)
    workspace = workspace_of(env)
    event = _read_event(env.get("GITHUB_EVENT_PATH"))
    config_path = Path(inputs.config) if inputs.config is not None else None
    config_file, found = load_config(config_path, required=config_path is not None)
    suite_config = resolve_suite(config_file, suite=inputs.suite, overrides=suite_overrides(inputs), config_path=found)
    confine_paths(workspace=workspace, paths={
        "input config": inputs.config, "input comment_file": inputs.comment_file, "input out_dir": inputs.out_dir,
        "kb": suite_config.kb, "cases": suite_config.cases, "store path": suite_config.store.path})
    return ActionSettings(
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        event=event,
        repository=env.get("GITHUB_REPOSITORY", ""),
        api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
        server_url=env.get("GITHUB_SERVER_URL") or "https://github.com",
        sha=env.get("GITHUB_SHA", ""),
        ref=env.get("GITHUB_REF", ""),
        run_id=env.get("GITHUB_RUN_ID", ""),
        output_file=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
        summary_file=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None,
        inputs=inputs,
        suite_config=suite_config,
        baseline_path=baseline_repo_path(suite_config=suite_config, inputs=inputs, workspace=workspace),
        out_dir=Path(inputs.out_dir),
    )


def parse_inputs(env: Mapping[str, str]) -> ActionInputs:
    """``INPUT_*`` → ActionInputs. Blank values are "not set"; booleans accept true/false,
    yes/no, on/off, 1/0."""

    def get(name: str) -> str | None:
        value = env.get(f"INPUT_{name.upper()}")
        value = value.strip() if value is not None else None
        return value or None

    data: dict[str, Any] = {}
    for name in ("config", "kb", "cases", "k", "model", "store", "base_ref", "comment_file"):
        data[name] = get(name)
    for name, default in (("suite", "default"), ("baseline_dir", "baselines"), ("out_dir", DEFAULT_OUT_DIR)):
        data[name] = get(name) or default
    data["github_token"] = SecretStr(github_token(env))
    mode = (get("mode") or "auto").lower()
    if mode not in MODES:
        raise UsageError(f"input mode: must be one of {', '.join(MODES)} (got {mode!r})")
    data["mode"] = mode
    data["fail_on_regression"] = _bool("fail_on_regression", get("fail_on_regression"), None)
    data["comment"] = _bool("comment", get("comment"), True)
    pr = get("pr_number")
    if pr is not None:
        if not pr.lstrip("#").isdigit():
            raise UsageError(f"input pr_number: must be a pull request number (got {pr!r})")
        data["pr_number"] = int(pr.lstrip("#"))
    suite = data["suite"]
    if "/" in suite or "\\" in suite or suite.startswith("."):
        raise UsageError(f"input suite: {suite!r} cannot be a file name (no slashes, no leading dot)")
    return ActionInputs(**data)


def suite_overrides(inputs: ActionInputs) -> dict[str, Any]:
    """The inputs that override the config file, in ``resolve_suite``'s shape (None = keep)."""
    out: dict[str, Any] = {"kb": inputs.kb, "cases": inputs.cases, "k": inputs.k, "model": inputs.model}
    if inputs.store is not None:
        out["store"] = {"path": inputs.store}
    if inputs.fail_on_regression is not None:
        out["gate"] = {"fail_on_regression": inputs.fail_on_regression}
    return out


def baseline_repo_path(*, suite_config: SuiteConfig, inputs: ActionInputs, workspace: Path) -> str:
    """The baseline's path inside the repository: the config's ``baseline`` when set, else
    ``<baseline_dir>/<suite>.json``. Normalised to forward slashes; must stay inside the repo."""
    raw = suite_config.baseline or f"{inputs.baseline_dir.rstrip('/')}/{inputs.suite}.json"
    path = Path(raw)
    if path.is_absolute():
        try:
            path = path.relative_to(workspace.resolve())
        except ValueError:
            raise UsageError(f"baseline path {raw} is outside the workspace {workspace}") from None
    clean = posixpath.normpath(path.as_posix())
    if clean in (".", "") or clean.startswith("../") or clean == "..":
        raise UsageError(f"baseline path {raw} must be a file inside the repository")
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


def _read_event(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(path, None, f"cannot read the event payload: {exc}")) from None
    except json.JSONDecodeError as exc:
        raise InputError(Problem(path, exc.lineno, f"event payload is not JSON: {exc.msg}")) from None
    if not isinstance(data, dict):
        raise InputError(Problem(path, 1, "event payload is not a JSON object"))
    return data


def confine_paths(*, workspace: Path, paths: Mapping[str, str | None]) -> None:
    """Every path the action reads or writes must stay inside the workspace once resolved
    (``..`` and symlinks followed): ``out_dir: ../../x`` or a ``kb`` symlinked to ``/etc`` is a
    usage error (exit 2) before anything is read or written. Relative paths are taken from the
    workspace (the working directory of the action)."""
    root = os.path.realpath(workspace)
    for name, raw in paths.items():
        if raw is None:
            continue
        resolved = os.path.realpath(os.path.join(root, raw))
        if resolved != root and not resolved.startswith(root.rstrip(os.sep) + os.sep):
            raise UsageError(f"{name} {raw[:80]!r} resolves to {resolved[:120]}, outside the workspace {root}: "
                             "every path of the action must stay inside it")
