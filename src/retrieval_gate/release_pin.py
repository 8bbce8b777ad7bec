"""The commit a release of retrieval-gate is pinned by, for the workflows ``retrieval-gate init``
writes. The repository holds ``None``: the release workflow writes the release commit into this
file of the wheel it builds (scripts/write-release-pin), so a released ``init`` writes
``uses: OWNER/retrieval-gate/...@<that sha>  # vX.Y.Z``. A build without it needs ``--action-ref``."""

from __future__ import annotations

ACTION_REF: str | None = None  # "OWNER/retrieval-gate@<40-hex commit sha>"
ACTION_VERSION: str | None = None  # "vX.Y.Z", the comment beside the pin
