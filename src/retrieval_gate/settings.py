"""Settings, read once: config file (``retrieval-gate.yml``, named suites) overridden by CLI flags
(and, for the action, ``INPUT_*``), validated into one typed object. No other module reads
``os.environ`` or parses flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from retrieval_gate.audit.params import AuditParams  # golden-set audit knobs (issue 14)
from retrieval_gate.errors import InputError, Problem
from retrieval_gate.metrics import parse_k_list, parse_metric

DEFAULT_CONFIG_NAME = "retrieval-gate.yml"
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkSettings(_Strict):
    """Markdown/text cards are split by headings, then by size (characters) with overlap."""

    size: int = Field(default=1200, ge=50)
    overlap: int = Field(default=150, ge=0)
    by_headings: bool = True


class StoreSettings(_Strict):
    mode: Literal["persistent", "ephemeral", "http"] = "persistent"
    path: str | None = None  # persistent: default .retrieval-gate/store
    host: str | None = None
    port: int | None = None
    # Search: True = exact (brute force over the stored vectors), False = the HNSW index,
    # None = auto: exact up to ``exact_max_chunks`` chunks (deterministic, and no index noise
    # can move a gate), HNSW above.
    exact: bool | None = None
    exact_max_chunks: int = Field(default=50_000, ge=0)
    ann_check: bool = False  # report the ANN's recall against exact search
    hnsw_construction_ef: int = 100
    hnsw_search_ef: int = 100
    hnsw_m: int = 16


class GateSettings(_Strict):
    """Gate knobs, all inactive by default (report first, ADR-0023 (D))."""

    fail_on_regression: bool = False
    max_drop: dict[str, float] = Field(default_factory=dict)  # metric[:slice] → absolute drop
    default_max_drop: float = 0.02
    floors: dict[str, float] = Field(default_factory=dict)  # metric[:slice] → absolute floor
    alpha: float = Field(default=0.05, gt=0, lt=1)
    require_significance: bool = True


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
    abstain_threshold: float | None = None
    chunking: ChunkSettings = Field(default_factory=ChunkSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    baseline: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)  # retriever-specific settings
    audit: AuditParams = Field(default_factory=AuditParams)  # `retrieval-gate audit` (issue 14)

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
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        out.append(Problem(str(path), None, f"{loc}: {msg}"))
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
