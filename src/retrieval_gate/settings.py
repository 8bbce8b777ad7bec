"""The config file's schema and its reading: ``retrieval-gate.yml`` (named suites), with CLI flags
(or, for the action, its inputs) laid on top, validated into one ``SuiteConfig``.

Each part's settings model lives with the part (``chunk.chunking.ChunkSettings``,
``store.settings.StoreSettings``, ``embed.settings.EmbedSettings``, ``retrieve.settings.RetrieverOptions``,
``compare.gate.GateSettings``); this schema composes them and imports no builder. Retriever specs
are parsed here, once, and ``headline_k`` is checked against ``k`` for every entry point. The
entry points read the environment (``environment.py``) and hand in what it says: the variables
``http_headers`` name, and the folder for ONNX exports.

What lies on top of a suite — a CLI flag, an action input, a sweep point — is one typed
``overrides.SuiteOverrides`` (the config file's keys, nested as in the file); each value's rule
is checked once, by the model that owns the key, when it is laid over the suite here
(``resolve_suite``, ``override_suite``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
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
from retrieval_gate.defaults import MAX_OVERFETCH, MIN_OVERFETCH
from retrieval_gate.embed.settings import (
    DEFAULT_BACKEND,
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODEL,
    Backend,
    BatchSize,
    Device,
    EmbedSettings,
    backend_problem,
)
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.load.boundary import bad_string
from retrieval_gate.load.yamltext import key_lines, safe_load
from retrieval_gate.metrics import headline_k_problem, parse_k_list, parse_measure
from retrieval_gate.overrides import SuiteOverrides, config_problems, flag_keys
from retrieval_gate.retrieve.settings import HEADERS_KEY, RetrieverOptions
from retrieval_gate.retrieve.spec import RetrieverSpec, parse_retriever_list
from retrieval_gate.store.settings import StoreSettings

DEFAULT_CONFIG_NAME = "retrieval-gate.yml"
DEFAULT_BASELINE_DIR = "baselines"
MAX_K = 10_000
MAX_SUITE_NAME = 100


def suite_baseline_path(*, suite: str, folder: str = DEFAULT_BASELINE_DIR) -> str:
    """Where a suite's baseline lives when its config names none: ``<folder>/<suite>.json``
    (``compare`` and ``report`` locally, the action with its ``baseline_dir`` input)."""
    return f"{folder.rstrip('/')}/{suite}.json"


def default_baseline_path(*, configured: str | None, suite: str | None, results_suite: str | None) -> Path:
    """The baseline ``compare`` and ``report`` read without ``--baseline``: the suite's
    ``baseline`` in the config file, else ``baselines/<suite>.json`` (as the action does)."""
    if configured:
        return Path(configured)
    return Path(suite_baseline_path(suite=suite or results_suite or "default"))


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
    metrics: tuple[str, ...] | None = None  # measures (metrics.measures.REGISTRY; None: its default set)
    headline_k: int | None = None
    model: str = DEFAULT_MODEL
    retriever: str = "dense"
    overfetch: int = Field(default=3, ge=MIN_OVERFETCH, le=MAX_OVERFETCH)
    batch_size: BatchSize = DEFAULT_BATCH_SIZE  # the embedder's rule (embed/settings.py)
    device: Device = "cpu"  # embedding device (embed/settings.py)
    embed_backend: Backend = DEFAULT_BACKEND
    abstain_threshold: float | None = Field(default=None, allow_inf_nan=False)
    rel_level: int = Field(default=1, ge=1)  # a card is relevant at grade ≥ this (trec_eval -l)
    mean: Literal["relevant", "trec", "trec-c"] = "relevant"  # which cases each mean covers
    # how the golden set was judged (compare.judgements); None: from its pool provenance
    judgements: Literal["complete", "pooled"] | None = None
    chunking: ChunkSettings = Field(default_factory=ChunkSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    baseline: str | None = None
    options: RetrieverOptions = Field(default_factory=RetrieverOptions)  # each retriever's settings, flat keys
    audit: AuditParams = Field(default_factory=AuditParams)  # `retrieval-gate audit`
    sweep: SweepSettings = Field(default_factory=SweepSettings)  # `retrieval-gate sweep`
    _env_secrets: tuple[str, ...] = PrivateAttr(default=())  # http_headers values read from ${NAME}
    _embed_exports: Path | None = PrivateAttr(default=None)  # the entry point's folder for ONNX exports
    _resolved: dict[str, str] = PrivateAttr(default_factory=dict)  # options.dsn / api_key read from ${NAME}

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
                out.append(parse_measure(name))
            except UsageError as exc:
                raise ValueError(str(exc)) from None
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
        problem = headline_k_problem(headline_k=self.headline_k, k=self.k)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _from_the_entry_point(self, info: ValidationInfo) -> SuiteConfig:
        # What the entry point read from the environment (``resolve_suite``'s context): the
        # export folder, and the values of the ``${NAME}`` references in ``http_headers``.
        # pydantic runs this again, without a context, on an instance given as another model's
        # field (``ActionSettings.suite_config``): that instance keeps what its entry point set.
        if info.context is None:
            return self
        context = info.context or {}
        self._embed_exports = context.get("embed_exports")
        self._env_secrets = context.get("env_secrets", ())  # a sweep point keeps its suite's
        env = context.get("env")
        if env is not None and self.options.http.headers:
            headers, secrets = _header_refs(self.options.http.headers, env=env, where=context.get("where", "<flags>"),
                                            lines=context.get("header_lines", {}),
                                            denied=context.get("denied", (frozenset(), _RUNNER_PREFIXES)))
            self.options = self.options.with_headers(headers)
            self._env_secrets = secrets
        self._resolved = dict(context.get("resolved", {}))  # a sweep point keeps its suite's
        if env is not None:
            for key, value in (("dsn", self.options.stores.dsn), ("api_key", self.options.openai.api_key)):
                if value is not None and _ENV_REF.search(value):
                    self._resolved[key] = _option_ref(key, value, env=env, where=context.get("where", "<flags>"),
                                                      denied=context.get("denied", (frozenset(), _RUNNER_PREFIXES)))
            self._env_secrets = (*self._env_secrets, *(v for k, v in sorted(self._resolved.items()) if v))
        return self

    def resolved_option(self, key: str) -> str | None:
        """``options.dsn`` or ``options.api_key`` with its ``${NAME}`` read from the environment the
        entry point handed in (as written when there was none, or it names no variable)."""
        if key in self._resolved:
            return self._resolved[key]
        return self.options.stores.dsn if key == "dsn" else self.options.openai.api_key

    @property
    def env_secrets(self) -> tuple[str, ...]:
        """The values ``options.http_headers`` took from environment variables (``${NAME}``):
        secrets, to be scrubbed from everything written."""
        return self._env_secrets

    @property
    def embed(self) -> EmbedSettings:
        """The embedder's slice: its four keys, and the export folder the entry point gave."""
        api = self.options.openai
        return EmbedSettings(model=self.model, batch_size=self.batch_size, device=self.device,
                             backend=self.embed_backend, export_root=self._embed_exports,
                             api_base_url=api.base_url, api_key=self.resolved_option("api_key"),
                             api_timeout_s=api.timeout_s, api_deadline_s=api.deadline_s, api_retries=api.retries,
                             api_backoff_s=api.backoff_s, api_max_batch=api.max_batch)

    @property
    def retrievers(self) -> tuple[RetrieverSpec, ...]:
        """The retriever specs of ``retriever``, in order (parsed once per distinct text)."""
        return parse_retriever_list(self.retriever)


class ConfigFile(_Strict):
    suites: dict[str, SuiteConfig] = Field(default_factory=lambda: {"default": SuiteConfig()})
    _lines: dict[tuple[str, ...], int] = PrivateAttr(default_factory=dict)  # each key's line in the file


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
        config = ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(config_problems(source, exc=exc, lines=key_lines(text), model=ConfigFile)) from None
    if any(suite.options.http.headers for suite in config.suites.values()):  # their errors name the line
        config._lines = key_lines(text)
    return config


def override_suite(base: SuiteConfig, overrides: SuiteOverrides, *, where: str) -> SuiteConfig:
    """``base`` with ``overrides`` on top, validated by ``SuiteConfig`` (so by each part's model);
    a bad value is an ``InputError`` naming ``where`` and the key. A sweep point's settings."""
    data = base.model_dump()
    _deep_update(data, overrides.given())
    try:
        return SuiteConfig.model_validate(data, context={"embed_exports": base.embed.export_root,
                                                         "env_secrets": base.env_secrets,
                                                         "resolved": base._resolved})
    except ValidationError as exc:
        raise InputError(config_problems(where, exc=exc, model=SuiteConfig)) from None


def resolve_suite(
    config: ConfigFile, *, suite: str, overrides: SuiteOverrides | None = None, config_path: Path | None,
    env: Mapping[str, str] | None = None, embed_exports: Path | None = None,
    denied_variables: Collection[str] = (), denied_prefixes: tuple[str, ...] = (),
) -> SuiteConfig:
    """The suite from the file (or defaults) with flags on top; relative paths in the file are
    taken relative to the file's folder. ``options.http_headers`` values written ``${NAME}`` are
    read from ``env`` — the environment as ``publish.action_settings`` read it, once (the action's
    runner environment; ``eval`` passes the process's) — and left as written when ``env`` is None
    (``compare``, ``score``: nothing is sent anywhere). ``embed_exports``: where the ONNX backends
    keep their exports (``environment.onnx_export_root``, read by the entry point).
    ``denied_variables`` / ``denied_prefixes``: the variables a header may never name besides the
    runner's own — every forge's secrets (``forge.secret_variable_names``, from the registry,
    which this layer cannot import: the entry point hands them in)."""
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
    given = (overrides or SuiteOverrides()).given()
    _deep_update(data, given)
    where = str(config_path or "<flags>")
    try:
        in_file = config_path is not None and suite in config.suites and HEADERS_KEY not in given.get("options", {})
        lines = {key[4:]: line for key, line in config._lines.items()
                 if key[:4] == ("suites", suite, "options", HEADERS_KEY) and in_file}
        return SuiteConfig.model_validate(data, context={
            "embed_exports": embed_exports, "env": env, "where": where, "header_lines": lines,
            "denied": (frozenset(denied_variables), (*_RUNNER_PREFIXES, *denied_prefixes))})
    except ValidationError as exc:
        raise InputError(config_problems(config_path or Path("<flags>"), exc=exc, flags=flag_keys(given),
                                         model=SuiteConfig)) from None


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Variables a header may not name: the runner's own (its token, the action's inputs, paths).
_RUNNER_PREFIXES = ("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_")


def _option_ref(key: str, value: str, *, env: Mapping[str, str], where: str,
                denied: tuple[frozenset[str], tuple[str, ...]]) -> str:
    """``options.dsn`` / ``options.api_key`` with each ``${NAME}`` read from ``env`` (a missing
    variable, or one of the runner's or a forge's secrets, is an error naming the key, never the value)."""
    names, prefixes = denied

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in names or name.startswith(prefixes):
            raise InputError(Problem(where, None, f"options.{key}: ${{{name}}} is a runner variable or a forge's "
                                     "secret; name a variable you set for it"))
        if name not in env:
            raise InputError(Problem(where, None, f"options.{key}: environment variable {name} is not set"))
        return env[name]

    return _ENV_REF.sub(value_of, value)


def _header_refs(headers: Mapping[str, str], *, env: Mapping[str, str], where: str,
                 lines: Mapping[tuple[str, ...], int], denied: tuple[frozenset[str], tuple[str, ...]],
                 ) -> tuple[dict[str, str], tuple[str, ...]]:
    """Resolve ``${NAME}`` in ``options.http_headers`` values from ``env``; also the values read
    (secrets, scrubbed from outputs). A missing variable, or a secret of the runner or a forge
    (``denied``: names, prefixes), is an error naming the header's line (``lines``) when known."""
    secrets: list[str] = []
    names, prefixes = denied

    def value_of(header: str, match: re.Match[str]) -> str:
        name = match.group(1)
        line = lines.get((header,))
        if name in names or name.startswith(prefixes):
            raise InputError(Problem(where, line, f"options.http_headers.{header}: ${{{name}}} is a runner "
                                     "variable or a forge's secret; headers may only name variables you set "
                                     "for them"))
        if name not in env:
            raise InputError(Problem(where, line, f"options.http_headers.{header}: environment variable "
                                     f"{name} is not set"))
        secrets.append(env[name])
        return env[name]

    resolved = {key: _ENV_REF.sub(lambda m, key=key: value_of(key, m), value) for key, value in headers.items()}
    return resolved, tuple(s for s in secrets if s)


def _deep_update(target: dict[str, Any], updates: dict[str, Any]) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], {k: v for k, v in value.items() if v is not None})
        else:
            target[key] = value


def suite_for_results(*, config: Path | None, suite: str | None, results_suite: str,
                      overrides: SuiteOverrides | None = None) -> SuiteConfig:
    """The suite that judges a results file: ``--suite``, else the results' own suite when the
    config file has it, else ``default``; flags (``overrides``) on top."""
    config_file, config_path = load_config(config, required=config is not None)
    name = suite or (results_suite if results_suite in config_file.suites else "default")
    return resolve_suite(config_file, suite=name, overrides=overrides, config_path=config_path)
