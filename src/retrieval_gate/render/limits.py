"""The one rule for cutting text to fit a forge's size limit on what we post. Pure. Each forge's
own limits are the forge's (``forge/*/__init__.py``: ``Forge.limits``); the action passes them in.

The renderers first drop detail (fewer per-case rows, fewer slices; ``render.markdown``) and
only then, as a last resort, cut here: whole lines up to the limit, then a notice saying where
the full report is, with the sticky marker kept.
"""

from __future__ import annotations

# What the comment renderer aims for when no forge is named (``report --format markdown``): the
# smallest forge limit's aim (GitHub's 65,536 characters, less room for a notice);
# tests/unit/test_forge.py checks it against every forge.
DEFAULT_COMMENT_CHARS = 65_000
IN_THE_SUMMARY = "the full report is in the job summary."


def cut_to_fit(text: str, *, max_chars: int, marker: str, where: str = IN_THE_SUMMARY) -> str:
    """``text`` in at most ``max_chars`` characters: whole lines, then a notice ending in
    ``where``; the marker first when the cut would lose it. Unchanged when it fits."""
    if len(text) <= max_chars:
        return text
    notice = f"\n\n> ✂️ **Cut here** to fit the comment size limit; {where}\n"
    budget = max_chars - len(notice) - len(marker) - 1
    head = text[: max(budget, 0)]
    head = head[: head.rfind("\n") + 1] if "\n" in head else head
    if marker not in head:
        head = marker + "\n" + head
    return head.rstrip() + notice


def sticky_body(text: str, *, marker: str, max_chars: int) -> str:
    """The comment body: the marker first when the text lacks it (how the sticky comment is found
    again), at most ``max_chars`` characters (the forge's limit)."""
    body = text if marker in text else f"{marker}\n{text}"
    return cut_to_fit(body, max_chars=max_chars, marker=marker)
