"""The config file's schema and its reading: ``retrieval-gate.yml`` (named suites), with CLI flags
(or, for the action, its inputs) laid on top, validated into one ``SuiteConfig``.

Each part's settings model lives with the part (``chunk.chunking.ChunkSettings``,
``store.settings.StoreSettings``, ``embed.settings.EmbedSettings``, ``retrieve.settings.RetrieverOptions``,
``compare.gate.GateSettings``); this schema composes them and imports no builder. Retriever specs
are parsed here, once, and ``headline_k`` is checked against ``k`` for every entry point. The
entry points read the environment (``environment.py``) and hand in what it says: the variables
``http_headers`` name, and the folder for ONNX exports."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from retrieval_gate.audit.params import AuditParams
from retrieval_gate.chunk.chunking import ChunkSettings
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.embed.settings import DEFAULT_MODEL, Backend, Device, EmbedSettings, backend_problem
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.load.boundary import bad_string
from retrieval_gate.load.yamltext import safe_load
from retrieval_gate.metrics import parse_k_list, parse_metric
from retrieval_gate.retrieve.settings import RetrieverOptions
from retrieval_gate.retrieve.spec import RetrieverSpec, parse_retriever_list
from retrieval_gate.store.settings import StoreSettings

DEFAULT_CONFIG_NAME = "retrieval-gate.yml"
MAX_K = 10_000
MAX_SUITE_NAME = 100


def suite_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a suite name, or None. A suite name becomes a file name
    (``baselines/<suite>.json``) and a value in a workflow, so: 1 to 100 printable characters (no
    control character, line break or bidi override), no slash or backslash, no leading dot. The
    action's ``suite`` input and ``retrieval-gate init --suite`` are checked by this one rule."""
    if not name:
        return "cannot be empty"
    if len(name) > MAX_SUITE_NAME:
        return f"is {len(name)} characters long, over {MAX_SUITE_NAME}"
    if "/" in name or "\\" in name or name.startswith("."):
        return "cannot be a file name (no slashes, no leading dot)"
    if not name.isprintable():
        return "holds a control character, a line break or a bidi override"
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SweepSettings(_Strict):
    """A suite's ``sweep:`` block (``retrieval-gate sweep``, docs/sweep.md): the grid as
    ``{dotted key: [values]}``, each value checked by this schema when its point is made."""

    axes: dict[str, list[Any]] = Field(default_factory=dict)
    metric: str | None = None  # the measure that picks the winner (default nDCG at the headline k)
    seed: int = 0  # the split into selection and confirmation cases
    alpha: float = Field(default=0.05, gt=0, lt=1)


class SuiteConfig(_Strict):
    kb: str | None = None
    cases: str | None = None
    k: tuple[int, ...] = (1, 3, 5, 10)
    metrics: tuple[str, ...] | None = None  # measures (hit, recall, ndcg, mrr, precision, map)
    headline_k: int | None = None
    model: str = DEFAULT_MODEL
    retriever: str = "dense"
    overfetch: int = Field(default=3, ge=1)
    batch_size: int = Field(default=64, ge=1)
    device: Device = "cpu"  # embedding device (embed/settings.py)
    embed_backend: Backend = "torch"
    abstain_threshold: float | None = Field(default=None, allow_inf_nan=False)
    rel_level: int = Field(default=1, ge=1)  # a card is relevant at grade ≥ this (trec_eval -l)
    mean: Literal["relevant", "trec", "trec-c"] = "relevant"  # which cases each mean covers
    chunking: ChunkSettings = Field(default_factory=ChunkSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    baseline: str | None = None
    options: RetrieverOptions = Field(default_factory=RetrieverOptions)  # each retriever's settings, flat keys
    audit: AuditParams = Field(default_factory=AuditParams)  # `retrieval-gate audit`
    sweep: SweepSettings = Field(default_factory=SweepSettings)  # `retrieval-gate sweep`
    _env_secrets: tuple[str, ...] = PrivateAttr(default=())  # http_headers values read from ${NAME}
    _embed_exports: Path | None = PrivateAttr(default=None)  # the entry point's folder for ONNX exports

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: Any) -> Any:
        # A scalar ``k: 5`` is accepted as the one-element list [5] (docs/eval.md, config file).
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, str | list | tuple) or any(isinstance(v, bool) for v in value):
            raise ValueError("expected a list of cutoffs (e.g. [1, 5, 10]), a comma-separated string or one integer")
        try:
            ks = parse_k_list(value if isinstance(value, str) else list(value))
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        if ks[-1] > MAX_K:
            raise ValueError(f"k {ks[-1]} is above {MAX_K:,}")
        return ks

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, str | list | tuple):
            raise ValueError("expected a list of measures (e.g. [hit, ndcg]) or a comma-separated string")
        items = value.split(",") if isinstance(value, str) else list(value)
        out = []
        for item in items:
            name = str(item).strip()
            try:
                spec = parse_metric(name if "@" in name else f"{name}@1")
            except UsageError as exc:
                raise ValueError(str(exc)) from None
            out.append(spec.measure)
        return tuple(dict.fromkeys(out))

    @field_validator("embed_backend")
    @classmethod
    def _onnx_runs_on_the_cpu(cls, value: str, info: ValidationInfo) -> str:
        problem = backend_problem(backend=value, device=info.data.get("device", "cpu"))  # device: declared above
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("retriever")
    @classmethod
    def _retriever(cls, value: str) -> str:
        try:
            parse_retriever_list(value)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _headline_k_is_measured(self) -> SuiteConfig:
        if self.headline_k is not None and self.headline_k not in self.k:
            raise ValueError(f"headline_k {self.headline_k} is not one of the cutoffs k {list(self.k)}")
        return self

    @property
    def env_secrets(self) -> tuple[str, ...]:
        """The values ``options.http_headers`` took from environment variables (``${NAME}``):
        secrets, to be scrubbed from everything written."""
        return self._env_secrets

    @property
    def embed(self) -> EmbedSettings:
        """The embedder's slice: its four keys, and the export folder the entry point gave."""
        return EmbedSettings(model=self.model, batch_size=self.batch_size, device=self.device,
                             backend=self.embed_backend, export_root=self._embed_exports)

    @property
    def retrievers(self) -> tuple[RetrieverSpec, ...]:
        """The retriever specs of ``retriever``, in order (parsed once per distinct text)."""
        return parse_retriever_list(self.retriever)


class ConfigFile(_Strict):
    suites: dict[str, SuiteConfig] = Field(default_factory=lambda: {"default": SuiteConfig()})


def load_config(path: Path | None, *, required: bool = False) -> tuple[ConfigFile, Path | None]:
    """Read the config file; ``path=None`` looks for ``retrieval-gate.yml`` in the working folder."""
    if path is None:
        candidate = Path(DEFAULT_CONFIG_NAME)
        if not candidate.is_file():
            return ConfigFile(), None
        path = candidate
    path = Path(path)
    if not path.is_file():
        if required:
            raise InputError(Problem(str(path), None, "config file not found"))
        return ConfigFile(), None
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as exc:
        raise InputError(Problem(str(path), None, f"cannot read: {exc}")) from None
    return parse_config(text, source=path), path


def parse_config(text: str, *, source: Path) -> ConfigFile:
    """The config file's text → ConfigFile; ``source`` names it in errors (a local path, or
    ``<path>@<sha>`` for the base's copy read through the API)."""
    try:
        data = safe_load(text, aliases=True) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(Problem(str(source), line, f"YAML error: {getattr(exc, 'problem', exc)}")) from None
    if not isinstance(data, dict):
        raise InputError(Problem(str(source), 1, "config must be a mapping with a 'suites' key"))
    bad = bad_string(data)
    if bad is not None:
        raise InputError(Problem(str(source), None, f"string {bad[:40]!a} holds a lone surrogate: "
                                 "it cannot be written as UTF-8"))
    try:
        return ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(_config_problems(source, exc)) from None


def _config_problems(path: Path, exc: ValidationError, *, flags: frozenset[str] = frozenset()) -> list[Problem]:
    """One problem per field, named with the file — or ``<flags>`` when the value came from a flag."""
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        where = "<flags>" if err["loc"] and str(err["loc"][0]) in flags else str(path)
        if not err["loc"] and msg.startswith("headline_k "):  # the suite-wide check: say where each value came from
            where = ("--k and --headline-k" if {"k", "headline_k"} <= flags else
                     f"{path} (k) and --headline-k" if "headline_k" in flags else
                     f"--k and {path} (headline_k)" if "k" in flags else str(path))
        out.append(Problem(where, None, f"{loc}: {msg}" if loc else msg))
    return out


def resolve_suite(
    config: ConfigFile, *, suite: str, overrides: dict[str, Any], config_path: Path | None,
    env: Mapping[str, str] | None = None, embed_exports: Path | None = None,
) -> SuiteConfig:
    """The suite from the file (or defaults) with flags on top; relative paths in the file are
    taken relative to the file's folder. ``options.http_headers`` values written ``${NAME}`` are
    read from ``env`` — the environment as ``publish.action_settings`` read it, once (the action's
    runner environment; ``eval`` passes the process's) — and left as written when ``env`` is None
    (``compare``, ``score``: nothing is sent anywhere). ``embed_exports``: where the ONNX backends
    keep their exports (``environment.onnx_export_root``, read by the entry point)."""
    if suite not in config.suites:
        if config_path is not None and suite != "default":
            known = ", ".join(sorted(config.suites)) or "none"
            raise InputError(Problem(str(config_path), None, f"no suite named {suite!r} (suites: {known})"))
        base = SuiteConfig()
    else:
        base = config.suites[suite]
    data = base.model_dump()
    if config_path is not None and suite in config.suites:
        root = config_path.parent
        for key in ("kb", "cases", "baseline"):
            if data.get(key) and not Path(data[key]).is_absolute():
                data[key] = str(root / data[key]) if str(root) != "." else data[key]
    given = {k: v for k, v in overrides.items() if v is not None}
    _deep_update(data, given)
    try:
        resolved = SuiteConfig.model_validate(data)
    except ValidationError as exc:
        flags = frozenset(k for k, v in given.items() if not isinstance(v, dict))
        raise InputError(_config_problems(config_path or Path("<flags>"), exc, flags=flags)) from None
    if env is not None:
        resolved = _with_header_refs(resolved, env=env, where=str(config_path or "<flags>"))
    resolved._embed_exports = embed_exports
    return resolved


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Variables a header may not name: the runner's own (its token, the action's inputs, paths).
_RUNNER_PREFIXES = ("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_")


def _with_header_refs(config: SuiteConfig, *, env: Mapping[str, str], where: str) -> SuiteConfig:
    """Resolve ``${NAME}`` in ``options.http_headers`` values from ``env``; remember the values
    read (secrets, scrubbed from outputs). A missing variable, or one of the runner's own, is an error."""
    headers = config.options.http.headers  # text to text: checked with the options (retrieve/settings.py)
    if not headers:
        return config
    secrets: list[str] = []

    def value_of(header: str, match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith(_RUNNER_PREFIXES) or name == "GITHUB_TOKEN":
            raise InputError(Problem(where, None, f"options.http_headers.{header}: ${{{name}}} is a runner "
                                     "variable; headers may only name variables you set for them"))
        if name not in env:
            raise InputError(Problem(where, None, f"options.http_headers.{header}: environment variable "
                                     f"{name} is not set"))
        secrets.append(env[name])
        return env[name]

    resolved = {key: _ENV_REF.sub(lambda m, key=key: value_of(key, m), value) for key, value in headers.items()}
    out = config.model_copy(update={"options": config.options.with_headers(resolved)})
    out._env_secrets = tuple(s for s in secrets if s)
    return out


def _deep_update(target: dict[str, Any], updates: dict[str, Any]) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], {k: v for k, v in value.items() if v is not None})
        else:
            target[key] = value
