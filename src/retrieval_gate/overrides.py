"""The one override model: what lies on top of a suite — a CLI flag, an action input, a sweep
point — as the config file's own keys in its nested shape (``chunking.size`` is
``SuiteOverrides(chunking=ChunkOverrides(size=…))``), None meaning "keep the suite's"; and how a
schema error is named (the file and the key's line, or ``<flags>``).

The override names keys (``extra="forbid"``) and carries values of the keys' plain types (a
flag's text for ``k`` and ``metrics``, which the schema parses). Each value's rule — bounds,
cross-field checks — is the owning model's (``settings.SuiteConfig`` and the part models it
composes), checked once, when the overrides are laid over the suite (``settings.resolve_suite``,
``settings.override_suite``). Pure: no part's model is imported here."""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from retrieval_gate.errors import InputError, Problem


def _model_at(model: type[BaseModel], parts: tuple[str, ...]) -> type[BaseModel] | None:
    """The settings model that holds the key at ``parts`` (``suites.default.chunk_size`` → the
    suite's), walking the fields' types (a mapping's key is a name: passed over)."""
    current: Any = model
    i = 0
    while i < len(parts):
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(parts[i])
        if field is None:
            return None
        current, i = field.annotation, i + 1
        while True:
            origin = get_origin(current)
            if origin in (dict, Mapping):
                current, i = get_args(current)[1], i + 1
            elif origin in (Union, types.UnionType):
                current = next((a for a in get_args(current) if isinstance(a, type) and issubclass(a, BaseModel)),
                               next((a for a in get_args(current) if a is not type(None)), None))
            else:
                break
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def key_suggestion(model: type[BaseModel] | None, parts: tuple[str, ...]) -> str | None:
    """``did you mean `chunking: {size: …}`?`` for an unknown key: the nearest known key beside
    it (difflib), or a key one block down written flat (``chunk_size`` → ``chunking.size``)."""
    holder = _model_at(model, parts[:-1]) if model is not None and parts else None
    if holder is None:
        return None
    candidates: dict[str, str] = {}
    for name in holder.model_fields:
        candidates.setdefault(name, f"`{name}`")
        inner = _model_at(holder, (name,))
        for sub in inner.model_fields if inner is not None else ():
            for flat in (f"{name}_{sub}", f"{name}.{sub}", f"{name.rstrip('ing')}_{sub}"):
                candidates.setdefault(flat, f"`{name}: {{{sub}: …}}`")
    near = difflib.get_close_matches(parts[-1], list(candidates), n=1, cutoff=0.75)
    return f"did you mean {candidates[near[0]]}?" if near else None


def config_problems(path: Path | str, exc: ValidationError, *, flags: frozenset[str] = frozenset(),
                    lines: Mapping[tuple[str, ...], int] | None = None,
                    model: type[BaseModel] | None = None) -> list[Problem]:
    """One problem per field, named with the file (and the key's line, where ``lines`` knows it)
    — or ``<flags>`` when the value came from a flag (``flags``: the dotted keys given). An
    unknown key says the nearest known one of ``model`` (the validated root), if one is near."""
    out = []
    for err in exc.errors(include_url=False):
        parts = tuple(str(p) for p in err["loc"])
        loc = ".".join(parts)
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and (hint := key_suggestion(model, parts)) is not None:
            msg = f"{msg}: {hint}"
        from_flags = any(loc == f or loc.startswith(f + ".") for f in flags)
        beneath = any(f.startswith(loc + ".") for f in flags)  # a block's rule, over values a flag gave
        where = "<flags>" if from_flags else f"{path} and <flags>" if beneath and loc and str(path) != "<flags>" \
            else str(path)
        if msg.startswith("headline_k ") and parts[-1:] != ("headline_k",):
            parts = (*parts, "headline_k")  # the suite-wide check: its line is headline_k's
        if not err["loc"] and msg.startswith("headline_k "):  # the suite-wide check: say where each value came from
            where = ("--k and --headline-k" if {"k", "headline_k"} <= flags else
                     f"{path} (k) and --headline-k" if "headline_k" in flags else
                     f"--k and {path} (headline_k)" if "k" in flags else str(path))
        line = None
        if lines and where == str(path):
            line = next((lines[parts[:n]] for n in range(len(parts), 0, -1) if parts[:n] in lines), None)
        out.append(Problem(where, line, f"{loc}: {msg}" if loc else msg))
    return out


class _Overrides(BaseModel):
    """A partial settings block: every field None = "keep the suite's". Types are the keys' plain
    types (a flag's text for ``k`` and ``metrics``, parsed by the schema); the rules — bounds,
    cross-field checks — are the owning model's, checked once, when laid over the suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ChunkOverrides(_Overrides):  # chunking: chunk.chunking.ChunkSettings
    size: int | None = None
    overlap: int | None = None
    by_headings: bool | None = None
    unit: str | None = None


class StoreOverrides(_Overrides):  # store: store.settings.StoreSettings
    mode: str | None = None
    path: str | None = None
    host: str | None = None
    port: int | None = None
    exact: bool | None = None
    exact_max_chunks: int | None = None
    ann_check: bool | None = None
    hnsw_construction_ef: int | None = None
    hnsw_search_ef: int | None = None
    hnsw_m: int | None = None
    lock_timeout_s: float | None = None


class GateOverrides(_Overrides):  # gate: compare.gate.GateSettings
    fail_on_regression: bool | None = None
    max_drop: dict[str, float] | None = None  # laid over the file's, key by key
    default_max_drop: float | None = None
    floors: dict[str, float] | None = None  # laid over the file's, key by key
    alpha: float | None = None
    require_significance: bool | None = None
    correction: str | None = None
    unjudged: str | None = None  # needs-labels: "fail" (exit 1) or "warn"


class AuditOverrides(_Overrides):  # audit: audit.params.AuditParams
    shingle_size: int | None = None
    num_perm: int | None = None
    threshold: float | None = None
    seed: int | None = None
    query_shingle_chars: int | None = None
    query_threshold: float | None = None
    leak_min_words: int | None = None
    leak_containment: float | None = None
    min_card_chars: int | None = None
    coverage: str | tuple[str, ...] | None = None
    power: float | None = None
    review_limit: int | None = None


class SuiteOverrides(_Overrides):
    """What lies on top of a suite: a CLI flag, an action input, a sweep point (the config file's
    keys, nested as in the file). Built with keyword arguments; ``from_dotted`` reads a sweep's
    ``{"chunking.size": 300}``."""

    kb: str | None = None
    cases: str | None = None
    k: str | int | tuple[int, ...] | None = None
    metrics: str | tuple[str, ...] | None = None
    headline_k: int | None = None
    model: str | None = None
    retriever: str | None = None
    overfetch: int | None = None
    batch_size: int | None = None
    device: str | None = None
    embed_backend: str | None = None
    abstain_threshold: float | None = None
    rel_level: int | None = None
    mean: str | None = None
    judgements: str | None = None
    chunking: ChunkOverrides | None = None
    store: StoreOverrides | None = None
    gate: GateOverrides | None = None
    baseline: str | None = None
    options: dict[str, Any] | None = None  # flat retriever option keys (retrieve/settings.py), laid key by key
    audit: AuditOverrides | None = None

    @classmethod
    def from_dotted(cls, values: Mapping[str, Any], *, where: str) -> SuiteOverrides:
        """``{"chunking.size": 300, "retriever": "bm25"}`` → the nested overrides; an unknown key or a
        value of the wrong type is an ``InputError`` naming ``where`` and the key."""
        nested: dict[str, Any] = {}
        for key, value in values.items():
            *parents, leaf = key.split(".")
            node = nested
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        try:
            return cls.model_validate(nested)
        except ValidationError as exc:
            raise InputError(config_problems(where, exc)) from None

    def given(self) -> dict[str, Any]:
        """The keys given, nested as in the config file (None, and a block with nothing given, left out)."""
        return _pruned(self.model_dump(exclude_none=True))


def _pruned(data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in data.items():
        value = _pruned(value) if isinstance(value, dict) and key != "options" else value  # options: as given
        if value != {}:
            out[key] = value
    return out


def flag_keys(given: Mapping[str, Any], prefix: str = "") -> frozenset[str]:
    """The dotted keys of what was given, leaves only (``{"chunking": {"size": 1}}`` → ``chunking.size``)."""
    out: set[str] = set()
    for key, value in given.items():
        if isinstance(value, dict) and value and not (prefix == "" and key == "options"):  # options: one value
            out |= flag_keys(value, f"{prefix}{key}.")
        else:
            out.add(f"{prefix}{key}")
    return frozenset(out)
