"""GitHub's size limits on what we post, and the one rule for cutting text to fit them. Pure.

The renderers first drop detail (fewer per-case rows, fewer slices; ``render.markdown``) and
only then, as a last resort, cut here: whole lines up to the limit, then a notice saying where
the full report is, with the sticky marker kept.
"""

from __future__ import annotations

GITHUB_COMMENT_LIMIT = 65_536  # characters GitHub accepts in one issue / PR comment
COMMENT_MAX_CHARS = 65_000  # what the comment renderer aims for (room for a notice)
SUMMARY_LIMIT_BYTES = 1024 * 1024  # a step's job summary ("supports content up to a size of 1024k")
IN_THE_SUMMARY = "the full report is in the job summary."


def cut_to_fit(text: str, *, max_chars: int, marker: str, where: str = IN_THE_SUMMARY) -> str:
    """``text`` in at most ``max_chars`` characters: whole lines, then a notice ending in
    ``where``; the marker first when the cut would lose it. Unchanged when it fits."""
    if len(text) <= max_chars:
        return text
    notice = f"\n\n> ✂️ **Cut here** to fit GitHub's comment size limit; {where}\n"
    budget = max_chars - len(notice) - len(marker) - 1
    head = text[: max(budget, 0)]
    head = head[: head.rfind("\n") + 1] if "\n" in head else head
    if marker not in head:
        head = marker + "\n" + head
    return head.rstrip() + notice


def sticky_body(text: str, *, marker: str) -> str:
    """The comment body: the marker first when the text lacks it (how the sticky comment is found
    again), at most ``GITHUB_COMMENT_LIMIT`` characters."""
    body = text if marker in text else f"{marker}\n{text}"
    return cut_to_fit(body, max_chars=GITHUB_COMMENT_LIMIT, marker=marker)
