"""The process environment (shell): the one place in the package that reads ``os.environ``.

Read once per entry point: ``cli.main`` (``RETRIEVAL_GATE_DEBUG``), the action's settings
(the forge's variables — ``GITHUB_*``, ``CI_*``, ``BUILD_*`` — and ``INPUT_*``:
``publish.action_settings``, which hands them to the forge in use, ``forge/``), ``eval`` (the variables its
``http_headers`` name as ``${NAME}``) and every command that embeds (``eval``, ``embed``, ``init``,
the action: the folder of ONNX exports, ``onnx_export_root``, handed to the embedder's settings).
Everything else receives settings, never the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

DEBUG_VARIABLE = "RETRIEVAL_GATE_DEBUG"
ONNX_DIR_VARIABLE = "RETRIEVAL_GATE_ONNX_DIR"


def read_environment() -> dict[str, str]:
    """A copy of the process environment."""
    return dict(os.environ)


def debug_requested(env: dict[str, str]) -> bool:
    """``RETRIEVAL_GATE_DEBUG`` set to anything but empty or 0: show tracebacks of internal errors."""
    return env.get(DEBUG_VARIABLE, "") not in ("", "0")


def skip_pydantic_plugins() -> None:
    """Tell pydantic not to look for plugins in this process (``PYDANTIC_DISABLE_PLUGINS``,
    unless the user set it). Looking means reading the entry points of every installed package,
    ~15 ms of each command's start-up, and our models are internal: nothing observes them.
    Called by ``cli.main`` before any model is built."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def no_framework_telemetry() -> None:
    """Haystack sends usage telemetry from every pipeline run unless ``HAYSTACK_TELEMETRY_ENABLED``
    is false: an eval of a ``haystack:`` retriever sends none, unless the user set the variable.
    Called by ``cli.main``; imports nothing."""
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


def onnx_export_root(env: dict[str, str]) -> Path:
    """Where ``--embed-backend onnx|onnx-int8`` keeps the models it exports (one folder per model
    files hash): ``RETRIEVAL_GATE_ONNX_DIR``, else ``$XDG_CACHE_HOME/retrieval-gate/onnx``, else
    ``~/.cache/retrieval-gate/onnx``."""
    if env.get(ONNX_DIR_VARIABLE):
        return Path(env[ONNX_DIR_VARIABLE]).expanduser()
    cache = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(cache).expanduser() / "retrieval-gate" / "onnx"
