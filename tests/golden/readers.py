"""Independent readers for rendered output: Markdown → HTML with markdown-it-py (CommonMark + GFM
tables, raw HTML passed through, as GitHub would before sanitising), then ``html.parser`` to list
the tags, the text (entities decoded) and the tables' cells."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt

ZERO_WIDTH = re.compile("[\u200b\u200d]")
# GitHub's patterns, on the rendered text: @mention, #123 / GH-123 references, bare URLs.
MENTION = re.compile(r"(?<![A-Za-z0-9_])@[A-Za-z0-9]")
ISSUE_REF = re.compile(r"(?:#|\bGH-)\d", re.IGNORECASE)
BARE_URL = re.compile(r"(?i)\b(?:https?://|www\.)")


def markdown_html(text: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(text)


@dataclass
class Doc(HTMLParser):
    tags: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    tables: list[list[list[str]]] = field(default_factory=list)
    _cell: list[str] | None = None

    def __post_init__(self) -> None:
        HTMLParser.__init__(self, convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def tag_names(self) -> list[str]:
        return [t for t, _ in self.tags]


def parse_html(html: str) -> Doc:
    doc = Doc()
    doc.feed(html)
    doc.close()
    return doc


def parse_markdown(text: str) -> Doc:
    return parse_html(markdown_html(text))


def visible(text: str) -> str:
    """What a reader sees: the zero-width characters removed."""
    return ZERO_WIDTH.sub("", text)
