"""The action's settings, read ONCE from the runner's environment into one typed object: the
forge's place (``forge.base.ForgeSettings``, read by the forge in use: GitHub, GitLab or Azure
DevOps), the inputs, and the suite's configuration.

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

import os
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr

from retrieval_gate.environment import onnx_export_root, read_environment
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.files import ReadRefused, decode_text
from retrieval_gate.forge import FORGES, secret_variable_names
from retrieval_gate.forge.base import Forge, ForgeSettings, Tokens, http_url
from retrieval_gate.forge.guard import refuse_user_code
from retrieval_gate.overrides import GateOverrides, StoreOverrides, SuiteOverrides
from retrieval_gate.publish.modes import MODES, Mode, is_privileged
from retrieval_gate.publish.untrusted import (
    CONFIG_MAX_BYTES,
    MIN_SECRET_CHARS,
    confine_paths,
    read_confined,
)
from retrieval_gate.retrieve.spec import FRAMEWORKS
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
    """The action's inputs (action.yml), after parsing. Empty strings mean "not set". The token
    input (``github_token``) is the GitHub forge's (``Forge.action_inputs``): it is no setting of
    the flows, which get their tokens from the forge's settings."""

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
    history_url: str | None = None  # the published history site: the comment links to <url>/<suite>.html


# The input names, in action.yml's order (the forges' own first: GitHub's ``github_token``); tests
# check action.yml declares exactly these.
INPUT_NAMES: tuple[str, ...] = (*(name for forge in FORGES for name in forge.action_inputs), *ActionInputs.model_fields)
# Inputs of earlier releases: action.yml no longer declares them, and a workflow that still passes
# one (the runner hands it on, with a warning) is refused with the reason, never silently ignored.
RETIRED_INPUTS = {
    "comment_file": "mode comment no longer posts a Markdown file (comment_file): it renders the comment itself "
                    "from the fork run's data; pass results_file (and comparison_file) instead",
}


class ActionSettings(_Frozen):
    """Everything the flows need to know about this run."""

    place: ForgeSettings  # where the run is, on which forge (read by the forge: ``forge/*/settings.py``)
    inputs: ActionInputs
    suite_config: SuiteConfig
    baseline_path: str  # repository path, forward slashes, e.g. baselines/default.json
    out_dir: Path  # relative to the workspace unless given absolute
    config_repo_path: str | None = DEFAULT_CONFIG_NAME  # the config's path in the repository (None: outside it)
    secrets: tuple[SecretStr, ...] = ()  # scrubbed from everything posted or written

    @property
    def secret_values(self) -> list[str]:
        """The tokens, the forge's secret variables, and the config's environment-sourced header values."""
        return [secret.get_secret_value() for secret in self.secrets]

    @property
    def event_name(self) -> str:
        return self.place.event_name

    @property
    def repository(self) -> str:
        return self.place.repository

    @property
    def sha(self) -> str:
        return self.place.sha

    @property
    def ref(self) -> str:
        return self.place.ref

    @property
    def branch(self) -> str | None:
        return self.place.branch

    @property
    def workspace(self) -> Path:
        return self.place.workspace

    @property
    def default_branch(self) -> str | None:
        return self.place.default_branch

    @property
    def run_url(self) -> str | None:
        return self.place.run_url

    @property
    def is_fork(self) -> bool:
        return self.place.is_fork

    @property
    def pr_number(self) -> int | None:
        """The pull / merge request the forge says this run is for, else the ``pr_number`` input."""
        return self.place.pr_number if self.place.pr_number is not None else self.inputs.pr_number

    @property
    def base_sha(self) -> str | None:
        """The base commit as the environment states it (``place.verify_base``: checked against the API)."""
        return self.place.base_sha


def runner_environment() -> dict[str, str]:
    """The process environment (``environment.read_environment``) — the runner's for the action,
    and for ``eval`` the variables its ``http_headers`` name."""
    return read_environment()


def runner_secrets(env: Mapping[str, str], *, forge: Forge, tokens: Tokens) -> list[str]:
    """What must never be posted or written: the forge's secret values (its tokens, ``ACTIONS_*``,
    ``CI_JOB_TOKEN``, ``System.AccessToken``, …), except short flag values (``ACTIONS_STEP_DEBUG=true``)
    that are no secret and would garble every text they occur in."""
    values = forge.secret_values(env, tokens=tokens)
    return [value for value in dict.fromkeys(values) if len(value) >= MIN_SECRET_CHARS]


def build_action_settings(env: Mapping[str, str], *, forge: Forge, tokens: Tokens) -> ActionSettings:
    """The runner's environment → ActionSettings. Relative paths (config, kb, cases, store,
    out_dir) are relative to the working directory, which the caller sets to the workspace first
    (as the runner does for a Docker action), so they mean what they mean in a local run.
    ``tokens``: the job's tokens as the entry point read them (``forge.read_tokens``, once)."""
    place = forge.read_settings(env, tokens=tokens)
    inputs = parse_inputs(env)
    workspace = place.workspace
    config_path = Path(inputs.config) if inputs.config is not None else None
    # Paths stay inside the workspace: the inputs' before anything is read, the suite's after.
    confine_paths(workspace=workspace, paths={"input config": inputs.config, "input out_dir": inputs.out_dir})
    if is_privileged(requested=inputs.mode, event_name=place.event_name):
        config_file, found = _load_config_confined(config_path, workspace=workspace)
    else:
        config_file, found = load_config(config_path, required=config_path is not None)
    names, prefixes = secret_variable_names()
    suite_config = resolve_suite(config_file, suite=inputs.suite, overrides=suite_overrides(inputs), config_path=found,
                                 env=env, embed_exports=onnx_export_root(env),
                                 denied_variables=names, denied_prefixes=prefixes)
    refuse_user_code_beside_a_write_token(place, suite_config=suite_config, mode=inputs.mode)
    secrets = runner_secrets(env, forge=forge, tokens=tokens) + [
        v for v in suite_config.env_secrets if len(v) >= MIN_SECRET_CHARS]
    # The data files of the privileged modes (results_file, comparison_file) are read through
    # publish.untrusted.read_confined, which refuses links and paths outside the workspace itself.
    confine_paths(workspace=workspace, paths={
        "kb": suite_config.kb, "cases": suite_config.cases, "store path": suite_config.store.path})
    return ActionSettings(
        place=place,
        inputs=inputs,
        suite_config=suite_config,
        baseline_path=baseline_repo_path(suite_config=suite_config, inputs=inputs, workspace=workspace),
        out_dir=Path(inputs.out_dir),
        config_repo_path=_config_repo_path(inputs.config, workspace=workspace),
        secrets=tuple(SecretStr(v) for v in dict.fromkeys(secrets)),
    )


def refuse_user_code_beside_a_write_token(place: ForgeSettings, *, suite_config: SuiteConfig, mode: Mode) -> None:
    """A process that holds a token that writes the default branch (GitLab's
    ``RETRIEVAL_GATE_GITLAB_WRITE_TOKEN``, Azure DevOps' write token) runs no user code: no mode but
    ``write-baseline`` (which takes another job's results, and loads no retriever) may run in it, so
    a ``python:`` retriever, an HTTP retriever, the eval itself are refused there. On GitHub the
    workflow's ``permissions:`` say what the token can reach (docs/action.md)."""
    if not place.holds_write_token:
        return
    if mode == Mode.WRITE_BASELINE:  # its config declares no user code either, as docs/ci.md says
        python = [spec for spec in suite_config.retrievers if spec.kind in ("python", *FRAMEWORKS)]
        refuse_user_code(python, variable=place.write_variable,
                         advice="mode write-baseline takes the results of a job without it; give this job a config "
                                "whose suite names no python: retriever")
        return
    refuse_user_code(suite_config.retrievers, variable=place.write_variable,
                     advice="evaluate in a job without it and pass its results to mode write-baseline")
    raise UsageError(f"this job holds {place.write_variable} (a token that writes the default branch), so it "
                     f"runs no evaluation: use mode write-baseline with the results_file of the evaluation job "
                     f"(got mode {mode}); docs/ci.md")


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


def parse_inputs(env: Mapping[str, str]) -> ActionInputs:
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
    mode = (get("mode") or Mode.AUTO).lower()
    if mode not in MODES:
        raise UsageError(f"input mode: must be one of {', '.join(MODES)} (got {mode!r})")
    data["mode"] = Mode(mode)
    data["fail_on_regression"] = _bool("fail_on_regression", get("fail_on_regression"), None)
    data["comment"] = _bool("comment", get("comment"), True)
    data["audit"] = _bool("audit", get("audit"), True)
    if (url := get("history_url")) is not None:
        data["history_url"] = http_url("input history_url", value=url)
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
