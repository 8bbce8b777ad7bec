"""``forge.http.upsert_by_marker``: the sticky comment's protocol the REST adapters share (Azure
DevOps, Gitea) — edit the comment found, else post one, and never post twice when a POST's answer
is lost after it landed."""

from __future__ import annotations

import pytest

from retrieval_gate.errors import ForgeError, PermissionDenied
from retrieval_gate.forge.base import PostedComment
from retrieval_gate.forge.http import upsert_by_marker


class Thread:
    """A pull request's comments, and what was asked of them."""

    def __init__(self, *, found: str | None = None, post_fails: type[Exception] | None = None,
                 lands: bool = False):
        self.found, self.post_fails, self.lands = found, post_fails, lands
        self.calls: list[str] = []

    def find(self) -> str | None:
        self.calls.append("find")
        return self.found

    def post(self) -> PostedComment:
        self.calls.append("post")
        if self.post_fails is not None:
            if self.lands:
                self.found = "landed"
            raise self.post_fails("the answer was lost")
        return PostedComment(id=1, url="u", created=True)

    def edit(self, found: str) -> PostedComment:
        self.calls.append(f"edit {found}")
        return PostedComment(id=found, url="u", created=False)

    def upsert(self) -> PostedComment:
        return upsert_by_marker(find=self.find, post=self.post, edit=self.edit)


def test_the_comment_found_is_edited_and_none_is_posted() -> None:
    thread = Thread(found="c7")
    assert thread.upsert().created is False
    assert thread.calls == ["find", "edit c7"]


def test_with_none_found_one_is_posted() -> None:
    thread = Thread()
    assert thread.upsert().created is True
    assert thread.calls == ["find", "post"]


def test_a_post_that_landed_before_its_answer_was_lost_is_found_and_not_posted_again() -> None:
    thread = Thread(post_fails=ForgeError, lands=True)
    assert thread.upsert().id == "landed"
    assert thread.calls == ["find", "post", "find", "edit landed"]


def test_a_post_that_failed_and_did_not_land_raises_its_error() -> None:
    thread = Thread(post_fails=ForgeError)
    with pytest.raises(ForgeError, match="lost"):
        thread.upsert()
    assert thread.calls == ["find", "post", "find"]


def test_a_refused_token_stands_without_looking_again() -> None:
    thread = Thread(post_fails=PermissionDenied, lands=True)
    with pytest.raises(PermissionDenied):
        thread.upsert()
    assert thread.calls == ["find", "post"]
