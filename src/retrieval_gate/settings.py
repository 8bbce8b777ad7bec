"""The config file's schema and its reading: ``retrieval-gate.yml`` (named suites), with CLI flags
(or, for the action, its inputs) laid on top, validated into one ``SuiteConfig``.

Each part's settings model lives with the part (``chunk.chunking.ChunkSettings``,
``store.settings.StoreSettings``, ``compare.gate.GateSettings``); this schema composes them.
Retriever specs are parsed here, once, and ``headline_k`` is checked against ``k`` for every
entry point. The CLI parses flags; ``publish.action_settings`` is the one module that reads the
runner's environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from retrieval_gate.chunk.chunking import ChunkSettings
from retrieval_gate.compare.gate import GateSettings
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.metrics import parse_k_list, parse_metric
from retrieval_gate.retrieve.spec import RetrieverSpec, parse_retriever_list
from retrieval_gate.store.settings import StoreSettings

DEFAULT_CONFIG_NAME = "retrieval-gate.yml"
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    device: Literal["cpu", "cuda", "mps", "auto"] = "cpu"  # embedding device (embed/sentence.py)
    abstain_threshold: float | None = None
    chunking: ChunkSettings = Field(default_factory=ChunkSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    baseline: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)  # retriever-specific settings

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: Any) -> Any:
        return parse_k_list(value if isinstance(value, str) else list(value))

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, value: Any) -> Any:
        if value is None:
            return None
        items = value.split(",") if isinstance(value, str) else list(value)
        out = []
        for item in items:
            name = str(item).strip()
            spec = parse_metric(name if "@" in name else f"{name}@1")
            out.append(spec.measure)
        return tuple(dict.fromkeys(out))

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
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(Problem(str(path), line, f"YAML error: {getattr(exc, 'problem', exc)}")) from None
    except (UnicodeDecodeError, OSError) as exc:
        raise InputError(Problem(str(path), None, f"cannot read: {exc}")) from None
    if not isinstance(data, dict):
        raise InputError(Problem(str(path), 1, "config must be a mapping with a 'suites' key"))
    try:
        return ConfigFile.model_validate(data), path
    except ValidationError as exc:
        raise InputError(_config_problems(path, exc)) from None


def _config_problems(path: Path, exc: ValidationError) -> list[Problem]:
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        out.append(Problem(str(path), None, f"{loc}: {msg}" if loc else msg))
    return out


def resolve_suite(
    config: ConfigFile, *, suite: str, overrides: dict[str, Any], config_path: Path | None
) -> SuiteConfig:
    """The suite from the file (or defaults) with flags on top; relative paths in the file are
    taken relative to the file's folder."""
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
    _deep_update(data, {k: v for k, v in overrides.items() if v is not None})
    try:
        return SuiteConfig.model_validate(data)
    except ValidationError as exc:
        raise InputError(_config_problems(config_path or Path("<flags>"), exc)) from None


def _deep_update(target: dict[str, Any], updates: dict[str, Any]) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], {k: v for k, v in value.items() if v is not None})
        else:
            target[key] = value
