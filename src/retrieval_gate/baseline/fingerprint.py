"""The configuration fingerprint of a run, and what changed between two. Pure.

``fingerprint(results)`` = ``{"config": results.config (minus keys that do not change what is
retrieved, and minus what is derived from the KB: BM25's and hybrid's unit count), "k": the
cutoffs, "inputs": {name: sha256} of every input except the run being measured, "relevance":
{"level", "graded", "mean"} — how the numbers were scored}``.

Two runs are *like for like* when their **settings** are equal: everything in the fingerprint
except the KB (``inputs.kb``). A KB edit is the subject of a PR, shown on the KB line of "What
changed" (cards edited, added, removed), not a settings change (``settings_changes``); the
configuration table still lists its hash.

The vectors' backend is in the model's hash (``model_sha256``: the files' hash for torch on the
CPU, ``<hash>+onnx`` for the fp32 ONNX export). The two fp32 backends make vectors within
``embed.onnx.VERIFY_TOLERANCE`` of each other (every ONNX export is checked against torch before
it is used), so a change between them alone is listed in the configuration table but is no
settings change (``same_vectors``); ``onnx-int8`` and other devices are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retrieval_gate.baseline.model import ConfigChange
from retrieval_gate.score.results import Results

# Settings that do not change a single ranking (where the store lives, how big a batch is), nor a
# score (how the golden set was judged: it changes how a comparison reads unjudged cards).
VOLATILE_CONFIG_KEYS = frozenset({
    "batch_size", "progress", "store.path", "store.host", "store.port", "store.mode", "judgements",
})
# Inputs that are the thing measured, not its configuration: a scored run file changes with
# every retrieval change, so it is never part of the fingerprint.
MEASURED_INPUTS = frozenset({"run"})
# Values derived from the KB's content, not chosen by anyone: BM25's (and a hybrid lane's) number
# of indexed units. Dropped at any depth under ``config.details`` — also from an older baseline's
# fingerprint when it is compared (``settings_view``).
KB_DERIVED_KEYS = frozenset({"units"})
KB_INPUT_KEYS = ("inputs.kb",)
# Suffixes of ``model_sha256`` whose vectors agree within the fp32 check (embed/onnx.py).
FP32_BACKEND_SUFFIXES = ("", "+onnx")


def fingerprint(results: Results) -> dict[str, Any]:
    return {
        "config": _drop_derived(_drop(results.config, VOLATILE_CONFIG_KEYS)),
        "k": list(results.k),
        "inputs": {name: info.sha256 for name, info in sorted(results.inputs.items())
                   if name not in MEASURED_INPUTS},
        "relevance": relevance_fingerprint(level=results.relevance_level, graded=results.graded,
                                           mean=results.mean),
    }


def settings_view(fingerprint_: Mapping[str, Any]) -> dict[str, Any]:
    """A fingerprint without what the KB's content derives (``KB_DERIVED_KEYS`` under
    ``config.details``), e.g. a baseline written before that rule."""
    out = dict(fingerprint_)
    config = out.get("config")
    if isinstance(config, Mapping):
        out["config"] = _drop_derived(config)
    return out


def _drop_derived(config: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(config)
    if "details" in out:
        out["details"] = _strip(out["details"])
    return out


def _strip(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _strip(item) for key, item in value.items() if key not in KB_DERIVED_KEYS}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value


def settings_changes(changes: list[ConfigChange]) -> list[ConfigChange]:
    """The changes that make a comparison not like-for-like: all but the KB's (``inputs.kb``) and
    a switch between the fp32 backends (``same_vectors``)."""
    return [c for c in changes if c.key not in KB_INPUT_KEYS and not same_vectors(c)]


def same_vectors(change: ConfigChange) -> bool:
    """A ``model_sha256`` change from one fp32 backend to the other (torch on the CPU ↔ ONNX fp32)
    of the same model files: vectors within the checked tolerance, not a settings change."""
    if not (change.key == "config.model_sha256" or change.key.endswith(".model_sha256")):
        return False
    old, new = change.baseline, change.current
    if not isinstance(old, str) or not isinstance(new, str):
        return False
    return _fp32_base(old) is not None and _fp32_base(old) == _fp32_base(new)


def _fp32_base(sha: str) -> str | None:
    base, plus, suffix = sha.partition("+")
    return base if (plus + suffix) in FP32_BACKEND_SUFFIXES else None


def relevance_fingerprint(*, level: int = 1, graded: bool = False, mean: str = "relevant") -> dict[str, Any]:
    """How the numbers were scored; the defaults are what every file before them used."""
    return {"graded": graded, "level": level, "mean": mean}


def _drop(data: Mapping[str, Any], keys: frozenset[str], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if path in keys:
            continue
        out[key] = _drop(value, keys, f"{path}.") if isinstance(value, Mapping) else value
    return out


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"config": {"model": "m"}}`` → ``{"config.model": "m"}`` (lists stay values)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def config_changes(*, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[ConfigChange]:
    """Every flattened key whose value differs (absent on one side = None there), sorted."""
    old, new = flatten(baseline), flatten(current)
    return [ConfigChange(key=key, baseline=old.get(key), current=new.get(key))
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
