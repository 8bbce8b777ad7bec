"""A comparison lists at most ``KB_CHANGES_LISTED`` added, removed and edited cards each, and counts
them whole: however many cards a pull request changes, its comparison stays within the size the
fork-comment path reads (16 MiB)."""

from __future__ import annotations

import pytest

from retrieval_gate.compare import kb_changes as kb_diff_module
from retrieval_gate.compare.kb_changes import kb_diff
from retrieval_gate.render.changes import kb_line
from retrieval_gate.score.kb_manifest import KbCard


def _cards(ids: range, *, sha: str = "a") -> dict[str, KbCard]:
    return {f"c{i:05d}": KbCard(sha=sha, title=f"t{i}") for i in ids}


def test_the_lists_are_cut_and_the_totals_counted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kb_diff_module, "KB_CHANGES_LISTED", 3)  # our own budget, small to reach the cut
    before = {**_cards(range(0, 10)), **_cards(range(10, 20))}
    after = {**_cards(range(10, 14), sha="b"), **_cards(range(14, 20)), **_cards(range(20, 27))}
    diff = kb_diff(before=before, after=after)
    assert [c.card for c in diff.removed] == ["c00000", "c00001", "c00002"]  # the first by id
    assert (diff.total("removed"), diff.total("added"), diff.total("edited")) == (10, 7, 4)
    assert (diff.removed_total, diff.added_total, diff.edited_total) == (10, 7, 4)
    assert len(diff.added) == len(diff.edited) == 3
    assert kb_line(diff).startswith("4 cards edited (") and ", 7 added (" in kb_line(diff)


def test_lists_within_the_budget_are_whole_and_carry_no_total() -> None:
    diff = kb_diff(before=_cards(range(0, 2)), after=_cards(range(1, 3)))
    assert [c.card for c in diff.added] == ["c00002"] and diff.added_total is None and diff.total("added") == 1
