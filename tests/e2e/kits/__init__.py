"""One kit per forge for the forge-wide end-to-end test (``tests/e2e/test_action_forges.py``), a
module named as the forge (``Forge.name``): ``serve()`` its fake API over HTTP, ``Kit`` its job
runner and how to read what was posted and committed, ``SECRETS`` its tokens. A forge in the
registry without a kit here fails that test."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class Kit(Protocol):
    root: Path  # the job's checkout
    write_variable: str | None  # the variable of a token that writes the default branch (None: GitHub's one token)

    def refresh(self) -> tuple[int, str]: ...  # the default branch's refresh: exit code, log

    def commits(self) -> int: ...  # the commits the refresh made on the default branch

    def head(self) -> str: ...  # the default branch's head

    def pull_request(self, base: str) -> tuple[int, str]: ...  # change 7 judged against ``base``

    def posted(self) -> list[str]: ...  # the bodies of the comments / notes / threads on change 7

    def writes_of_the_comment(self) -> tuple[int, int]: ...  # (created, edited)

    # True where the token's comments are told by an author the API vouches for without an identity
    # call (GitHub's Actions token: the Bot account github-actions[bot]); False: the identity call is the proof
    identity_by_author: bool

    def plant_foreign(self, body: str) -> None: ...  # a comment / note / thread on change 7 by a human

    def refuse_identity(self) -> None: ...  # the fake refuses the token's identity call (GET /user, connectionData)
