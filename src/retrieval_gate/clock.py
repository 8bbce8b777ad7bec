"""The clock (shell): the one place that reads the time for timestamps written into files."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """Now, UTC, to the second, ISO 8601: ``2026-11-30T09:27:00+00:00``."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()
