"""The event payload of a GitHub Actions-style runner (GitHub's, and Gitea's and Forgejo's, which
write it in GitHub's shape): a file at ``GITHUB_EVENT_PATH``, capped and parsed under the input
limits of ``load.boundary``. Shared by the forges whose runner writes one (``forge/github``,
``forge/gitea``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import ReadRefused, decode_text, read_bounded
from retrieval_gate.load import boundary

EVENT_MAX_BYTES = 25 * 1024 * 1024  # GitHub's own webhook payload limit


def payload_object(value: Any) -> dict[str, Any]:
    """A part of the payload that should be an object, or an empty one (a payload is untrusted)."""
    return value if isinstance(value, dict) else {}


def read_event(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        text = decode_text(read_bounded(Path(path), max_bytes=EVENT_MAX_BYTES))
        data = boundary.loads(text)  # the input limits: depth, number range, duplicate keys, UTF-8 strings
    except ReadRefused as exc:
        raise InputError(Problem(path, None, f"cannot read the event payload: {exc.reason}")) from None
    except json.JSONDecodeError as exc:
        raise InputError(Problem(path, exc.lineno, f"event payload is not JSON: {exc.msg}")) from None
    except boundary.JsonRefused as exc:
        line = boundary.line_of(text, needle=exc.needle)
        raise InputError(Problem(path, line, f"event payload: {exc.message}")) from None
    if not isinstance(data, dict):
        raise InputError(Problem(path, 1, "event payload is not a JSON object"))
    return data
