"""A card's Markdown as the plain text a labeller reads (the labelling page): headings, paragraphs,
list items (``•`` or their number), table rows (cells joined by ``|``) and code, one block a line;
emphasis, link and image syntax gone (their text kept); raw HTML kept as literal text — the page
shows it with ``textContent``, never as markup. Parsed with markdown-it-py (CommonMark + tables)."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

_MD = MarkdownIt("commonmark").enable("table")


def _inline(token: Token) -> str:
    parts = []
    for child in token.children or ():
        if child.type in ("text", "code_inline", "html_inline", "image"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
    return "".join(parts)


def markdown_text(source: str) -> str:
    """``source`` (Markdown, or plain text, which passes nearly unchanged) as plain text."""
    out: list[str] = []
    lists: list[list[int] | None] = []  # per open list: [next number] when ordered, None when bulleted
    prefix = ""
    row: list[str] | None = None
    for token in _MD.parse(source):
        kind = token.type
        if kind == "bullet_list_open":
            lists.append(None)
        elif kind == "ordered_list_open":
            lists.append([int(str(token.attrGet("start") or 1))])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            counter = lists[-1] if lists else None
            mark = "•" if counter is None else f"{counter[0]}."
            if counter is not None:
                counter[0] += 1
            prefix = "  " * (len(lists) - 1) + mark + " "
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close":
            out.append(" | ".join(row or []))
            row = None
        elif kind == "inline":
            text = _inline(token)
            if row is not None:
                row.append(text)
            else:
                out.append(prefix + text)
                prefix = ""
        elif kind in ("fence", "code_block", "html_block"):
            out.append(prefix + token.content.rstrip("\n"))
            prefix = ""
    return "\n".join(out)
