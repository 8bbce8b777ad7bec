"""The sweep's grid (pure apart from the settings schema): axes → points → the order they run in
and the share of each shard.

A point is a typed override of the suite: ``{dotted key: value}`` read as the one override model
(``settings.SuiteOverrides``, which flags and action inputs build too), laid over the suite's own
settings and validated by the config file's schema (``settings.SuiteConfig``), so a sweep point,
a config file and a flag mean one thing. Values are read as YAML scalars (the config file's
loader) and written back as the schema made them (``"300"`` → ``300``).

Keys are split by what they change: *index-time* keys (chunking, model, backend, the HNSW build)
change what is embedded and stored; *query-time* keys (retriever, its options, over-fetch, exact
search, ``hnsw_search_ef``) only how the one index is searched. Points are grouped by their
index-time settings; a group runs on one store collection, one after the other, and a shard
takes whole groups.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, field_validator

from retrieval_gate.defaults import MIN_CHUNK_SIZE
from retrieval_gate.errors import InputError, Problem, UsageError
from retrieval_gate.load.yamltext import safe_load
from retrieval_gate.overrides import SuiteOverrides
from retrieval_gate.retrieve.spec import FRAMEWORKS, parse_retrievers
from retrieval_gate.settings import SuiteConfig, override_suite

# What a point may change. Not the cases, k, measures or means (the points would not be measured
# alike), nor where the store lives, nor the gate/audit/sweep blocks.
INDEX_KEYS = ("chunking.", "model", "embed_backend", "device", "batch_size", "store.hnsw_m",
              "store.hnsw_construction_ef", "kb")
QUERY_KEYS = ("retriever", "overfetch", "options.", "store.exact", "store.hnsw_search_ef", "abstain_threshold")
REFUSED = ("cases", "k", "headline_k", "metrics", "mean", "rel_level", "baseline", "gate", "audit", "sweep",
           "store.mode", "store.path", "store.host", "store.port", "store.lock_timeout_s", "store.ann_check")


def _matches(key: str, prefixes: Sequence[str]) -> bool:
    return any(key == p or (p.endswith(".") and key.startswith(p)) or key.startswith(p + ".") for p in prefixes)


def is_index_key(key: str) -> bool:
    return _matches(key, INDEX_KEYS)


class Override(BaseModel):
    """One point: dotted keys of the suite's schema → values, already checked by it (its
    identity in ``sweep.json``); ``overrides`` is the same point as the one override model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    values: dict[str, Any]

    @field_validator("values")
    @classmethod
    def _sweepable(cls, values: dict[str, Any]) -> dict[str, Any]:
        check_point(values, where="<sweep>")
        return values

    def apply(self, base: SuiteConfig) -> SuiteConfig:
        """The suite with these values laid on top (nothing else changes)."""
        return apply_override(base, self.values, where="<sweep>")

    @property
    def overrides(self) -> SuiteOverrides:
        return SuiteOverrides.from_dotted(self.values, where="<sweep>")

    @property
    def key(self) -> str:
        return canonical(self.values)

    def index_part(self) -> dict[str, Any]:
        return {k: v for k, v in self.values.items() if is_index_key(k)}


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def dotted_get(data: Mapping[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def apply_override(base: SuiteConfig, values: Mapping[str, Any], *, where: str) -> SuiteConfig:
    """``base`` with ``values`` (dotted keys) on top, as ``SuiteOverrides`` validated by
    ``SuiteConfig``; a bad value is an ``InputError`` naming ``where`` and the key."""
    return override_suite(base, overrides=SuiteOverrides.from_dotted(values, where=where), where=where)


def check_key(key: str, *, where: str) -> str:
    key = key.strip()
    if not key or _matches(key, REFUSED):
        raise InputError(Problem(where, None, f"{key!r} cannot be swept: a point may change the retrieval "
                                 "settings (chunking.*, model, embed_backend, retriever, options.*, overfetch, "
                                 "store.exact, store.hnsw_*), not the cases, k, measures or where the store lives"))
    if not (is_index_key(key) or _matches(key, QUERY_KEYS)):
        raise InputError(Problem(where, None, f"{key!r} is not a key of a suite's retrieval settings "
                                 "(chunking.size, chunking.overlap, model, retriever, options.bm25_k1, …)"))
    if dotted_get(SuiteConfig().model_dump(), key) is None and not key.startswith("options.") \
            and key not in ("abstain_threshold", "store.exact"):
        raise InputError(Problem(where, None, f"{key!r} is not a key of the suite's schema"))
    return key


def check_point(values: Mapping[str, Any], *, where: str) -> None:
    """Every key of a point (an axis, a run's settings, a winner) is one a sweep may touch
    (``check_key``): the one check on every path that reads a point — a plan, a part file of
    ``sweep merge`` (they travel as CI artifacts), ``--apply`` — so no point writes the gate, the
    cases, the baseline, the store's path or anything outside the retrieval settings."""
    if not isinstance(values, Mapping):
        raise InputError(Problem(where, None, f"a point is a mapping of settings, not {type(values).__name__}"))
    for key in values:
        if not isinstance(key, str) or check_key(key, where=where) != key:
            raise InputError(Problem(where, None, f"a point's key {key!r} is not a settings key"))


USER_CODE_KINDS = ("python", "http", "run", *FRAMEWORKS)


def check_part_winner(values: Mapping[str, Any], *, where: str, current: SuiteConfig) -> None:
    """A winner read from part files (``sweep merge … --apply``): ``check_point``, and a retriever
    that runs code or calls an endpoint (``python:``, ``http(s)://``, ``run:``) only when it is the
    suite's own already — a part file travels as a CI artifact, so it may not choose the code
    that later gates run."""
    check_point(values, where=where)
    if "retriever" not in values or values["retriever"] == current.retriever:
        return
    try:
        specs = parse_retrievers(str(values["retriever"]))
    except (InputError, UsageError, ValueError):
        specs = []
    if not specs or any(spec.kind in USER_CODE_KINDS for spec in specs):
        raise InputError(Problem(where, None, f"retriever {values['retriever']!r} from a sweep part is not written: "
                                 "--apply writes a python:, http(s):// or run: retriever only when it is the suite's "
                                 "own; set it by hand if you mean it"))


def parse_axis(text: str) -> tuple[str, list[Any]]:
    """``--axis chunking.size=300,600`` → ``("chunking.size", [300, 600])`` (values as YAML scalars)."""
    key, sep, raw = text.partition("=")
    if not sep or not raw.strip():
        raise UsageError(f"--axis {text!r}: expected KEY=V1,V2,… (e.g. chunking.size=300,600,1200)")
    values: list[Any] = []
    for item in raw.split(","):
        try:
            values.append(safe_load(item, aliases=False) if item.strip() else "")
        except yaml.YAMLError:
            values.append(item.strip())
    return check_key(key, where=f"--axis {key.strip()}"), values


@dataclass(frozen=True)
class Point:
    override: Override
    group: int  # index of its index-time group, in run order
    reference: bool = False

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.override.values)


@dataclass(frozen=True)
class Plan:
    suite: str
    axes: dict[str, list[Any]]
    reference: dict[str, Any]
    points: tuple[Point, ...]

    def fingerprint(self) -> str:
        """What a shard's part must agree on with the others to be merged."""
        return hashlib.sha256(canonical({"suite": self.suite, "axes": self.axes, "reference": self.reference,
                                         "points": [p.override.key for p in self.points]}).encode()).hexdigest()

    def shard(self, index: int, count: int) -> list[Point]:
        """Shard ``index`` (1-based) of ``count``: whole index groups, the largest first, each to the
        least-loaded shard (ties: the lowest shard number). Deterministic."""
        sizes: dict[int, int] = {}
        for p in self.points:
            sizes[p.group] = sizes.get(p.group, 0) + 1
        load = [0] * count
        owner: dict[int, int] = {}
        for group in sorted(sizes, key=lambda g: (-sizes[g], g)):
            target = min(range(count), key=lambda s: (load[s], s))
            owner[group] = target
            load[target] += sizes[group]
        return [p for p in self.points if owner[p.group] == index - 1]


def make_plan(*, base: SuiteConfig, suite: str, axes: Mapping[str, Sequence[Any]], where: str) -> Plan:
    """Every combination of the axes' values (in the order given), plus the suite's own settings
    (the reference) when no combination equals them; grouped by index-time settings."""
    if not axes:
        raise UsageError("a sweep needs at least one axis: --axis KEY=V1,V2,… or a suite's sweep.axes")
    keys = [check_key(k, where=where) for k in axes]
    _check_overlap(base, axes=axes, where=where)
    base_data = base.model_dump()
    # Every point, whole, is a valid suite (e.g. overlap below size) before anything runs; its
    # values are read back as the schema made them ("300" → 300). Values are checked together:
    # a size below the suite's overlap is fine beside an overlap axis that makes it valid.
    combos: list[dict[str, Any]] = []
    typed: dict[str, list[Any]] = {key: [] for key in keys}
    for raw in itertools.product(*(axes[k] for k in keys)):
        combo = dict(zip(keys, raw, strict=True))
        made = apply_override(base, combo, where=f"{where} ({', '.join(f'{k}={v}' for k, v in combo.items())})")
        made_data = made.model_dump()
        point = {key: dotted_get(made_data, key) for key in keys}
        for key in keys:
            if point[key] not in typed[key]:
                typed[key].append(point[key])
        if all(canonical(point) != canonical(c) for c in combos):
            combos.append(point)
    reference = {key: dotted_get(base_data, key) for key in keys}
    if not any(canonical(c) == canonical(reference) for c in combos):
        combos.insert(0, reference)
    groups: dict[str, int] = {}
    for combo in sorted(combos, key=lambda c: canonical(c) != canonical(reference)):  # the reference's build first
        groups.setdefault(canonical({k: v for k, v in combo.items() if is_index_key(k)}), len(groups))
    points = [Point(override=Override(values=c), group=groups[canonical({k: v for k, v in c.items()
                                                                         if is_index_key(k)})],
                    reference=canonical(c) == canonical(reference)) for c in combos]
    points.sort(key=lambda p: p.group)  # stable: grid order inside a group
    return Plan(suite=suite, axes=typed, reference=reference, points=tuple(points))


def _check_overlap(base: SuiteConfig, *, axes: Mapping[str, Sequence[Any]], where: str) -> None:
    """A chunk-size axis without an overlap axis keeps the suite's overlap (150 by default, so the
    baselines keep their meaning); a size not above it is refused with the one-line fix."""
    if "chunking.size" not in axes or "chunking.overlap" in axes:
        return
    sizes = [v for v in axes["chunking.size"] if isinstance(v, int) and not isinstance(v, bool)
             and v >= MIN_CHUNK_SIZE]  # a size the schema refuses is named by the schema's own message
    overlap = base.chunking.overlap
    if sizes and min(sizes) <= overlap:
        small = min(sizes)
        raise InputError(Problem(where, None, f"chunking.size {small} is not above the suite's chunk overlap "
                                 f"({overlap}); add an overlap axis below it, e.g. --axis "
                                 f"chunking.overlap={max(0, small // 8)}, or set chunking.overlap in the suite"))


def parse_shard(text: str) -> tuple[int, int]:
    index, sep, count = text.partition("/")
    if not sep or not index.strip().isdigit() or not count.strip().isdigit():
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 1/2")
    i, n = int(index), int(count)
    if not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: I must be between 1 and N")
    return i, n
