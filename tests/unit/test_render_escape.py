"""The Markdown escaper: hostile user data must read as itself and never act as Markdown, HTML,
an @mention, an issue reference or a link. Checked by rendering with markdown-it-py (an
independent CommonMark + GFM-tables parser) and reading the HTML back."""

from __future__ import annotations

import pytest

from retrieval_gate.render.escape import chart_label, clean_text, marker_suite, md_text
from tests.golden.readers import BARE_URL, ISSUE_REF, MENTION, parse_markdown, visible

HOSTILE = [
    "a|b",
    "a \\| b",
    "||||",
    "`code`",
    "``double``",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<!-- comment -->",
    "<details><summary>x</summary>",
    "</details></table>",
    "&lt;script&gt; is already an entity",
    "&amp; &#124; &#x41;",
    "*bold* **strong** _em_ __strong__ ~~strike~~ ~sub~",
    "[link](https://evil.example) ![img](https://evil.example/x.png)",
    "[ref][1]\n\n[1]: https://evil.example",
    "<https://evil.example>",
    "$x^2$ and $$\\int$$",
    "@octocat please look",
    "cc @acme/security-team",
    "(@someone) and x@y.com",
    "fixes #123 and owner/repo#45 and GH-7",
    "see https://evil.example/a?b=c and www.evil.example",
    "line one\nline two\r\n| injected | row |",
    "tab\tseparated\x0bvertical\x0cfeed",
    "nul\x00bell\x07esc\x1b[31mred",
    "bidi \u202eevil\u202c and \u2066isolate\u2069",
    "line\u2028separator\u2029paragraph",
    "\\ backslash \\\\ double",
    "unicode ok: ação 日本語 🙂",
    "x_y_z snake_case_id __dunder__",
    "[^1] footnote",
    ":tada: emoji",
    "trailing backslash \\",
]

BLOCK_STARTERS = ["# heading", "## h2", "> quote", "- item", "+ item", "* item", "1. item", "2) item",
                  "---", "===", "***", "    indented code", "```fence", "~~~fence", "| a | b |", "<div>"]

INLINE_TAGS = {"script", "img", "a", "em", "strong", "code", "del", "s", "details", "summary", "div", "table",
               "h1", "h2", "blockquote", "ul", "ol", "li", "pre", "hr", "p"}


def in_table_cell(value: str) -> str:
    return f"| id | value |\n|:--|:--|\n| 1 | {md_text(value)} |\n"


@pytest.mark.parametrize("value", HOSTILE + BLOCK_STARTERS)
def test_escaped_value_stays_in_its_table_cell_and_reads_as_itself(value: str) -> None:
    doc = parse_markdown(in_table_cell(value))
    assert len(doc.tables) == 1
    header, *rows = doc.tables[0]
    assert header == ["id", "value"]
    assert len(rows) == 1 and len(rows[0]) == 2 and rows[0][0] == "1"  # one body row, two cells
    assert visible(rows[0][1]) == clean_text(value)  # reads as the original, on one line


@pytest.mark.parametrize("value", HOSTILE + BLOCK_STARTERS)
def test_escaped_value_creates_no_markup_at_all(value: str) -> None:
    doc = parse_markdown(in_table_cell(value))
    created = set(doc.tag_names()) - {"table", "thead", "tbody", "tr", "th", "td"}
    assert created == set(), f"{value!r} produced {created}"


@pytest.mark.parametrize("value", BLOCK_STARTERS + HOSTILE)
def test_escaped_value_cannot_start_a_block_in_a_list_item_or_paragraph(value: str) -> None:
    doc = parse_markdown(f"- {md_text(value)}\n\n{md_text(value)}\n")
    names = doc.tag_names()
    assert names.count("li") == 1 and names.count("ul") == 1
    assert set(names) <= {"ul", "li", "p"}, f"{value!r} produced {names}"
    assert not set(names) & (INLINE_TAGS - {"ul", "li", "p"})


@pytest.mark.parametrize("value", HOSTILE)
def test_github_text_filters_find_nothing_to_act_on(value: str) -> None:
    text = parse_markdown(in_table_cell(value)).text
    assert not MENTION.search(text)
    assert not ISSUE_REF.search(text)
    assert not BARE_URL.search(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a|b", "a&#124;b"),
        ("<b>", "&lt;b&gt;"),
        ("`x`", "&#96;x&#96;"),
        ("@octocat", "@\u200doctocat"),
        ("#123", "&#35;\u200d123"),  # leading # is a heading starter, then the reference is broken
        ("see #123", "see #\u200d123"),
        ("GH-12", "GH\u200d-12"),
        ("https://x.example", "https:\u200b//x.example"),
        ("www.x.example", "www\u200b.x.example"),
        ("q_001", "q_001"),  # a lone underscore between letters/digits stays readable
        ("_em_", "&#95;em&#95;"),
        ("__init__", "&#95;&#95;init&#95;&#95;"),
        ("1. item", "1&#46; item"),
        ("0.1.0", "0.1.0"),  # not a list marker: no space after the dot
        ("- item", "&#45; item"),
        ("hit@5", "hit@5"),  # not a mention: a word character before the @
        ("a\nb\r\nc", "a b c"),
        ("  padded  ", "padded"),
        ("", ""),
    ],
)
def test_md_text_exact_output(value: str, expected: str) -> None:
    assert str(md_text(value)) == expected


def test_md_text_cuts_before_escaping_so_no_entity_is_split() -> None:
    out = str(md_text("|" * 50, max_len=10))
    assert out == "&#124;" * 9 + "…"
    assert clean_text("abcdefghij", max_len=5) == "abcd…"
    assert clean_text("abc", max_len=5) == "abc"


def test_md_text_of_none_and_numbers() -> None:
    assert str(md_text(None)) == ""
    assert str(md_text(12)) == "12"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("a1b2c3d", "a1b2c3d"), ('x"]\n```', "x"), ("this run", "this run"), ("", "?"), ("é", "?"),
     ("0123456789abcdef", "0123456789ab")],
)
def test_chart_label_keeps_only_safe_characters(value: str, expected: str) -> None:
    assert chart_label(value) == expected


@pytest.mark.parametrize(
    ("suite", "expected"),
    [("docs", "docs"), ("team/search:v2", "team/search:v2"), ("a --> b", "a_-___b"), ("", "default"),
     ("<x>", "_x_")],
)
def test_marker_suite_never_closes_the_html_comment(suite: str, expected: str) -> None:
    assert marker_suite(suite) == expected
    assert "--" not in marker_suite(suite) and ">" not in marker_suite(suite)


# --- text for a terminal or a CI log -------------------------------------------------------------

from retrieval_gate.render.escape import escape_terminal, no_bidi  # noqa: E402


@pytest.mark.parametrize(("text", "expected"), [
    ("a\n::error file=x::y", "a\\x0a::error file=x::y"),
    ("::add-mask::ghs_", "%3A:add-mask::ghs_"),
    ("  \t::stop-commands::pwn", "  \t%3A:stop-commands::pwn"),
    ("x ##[add-mask]s", "x ##%5Badd-mask]s"),
    ("\x1b[2J\x9b\x07\r", "\\x1b[2J\\x9b\\x07\\x0d"),
    ("\u202eevil\u2066", "\\u202eevil\\u2066"),
    ("caf\udce9", "caf\\udce9"),  # a file name that is not UTF-8: shown, never an encoding error
    ("q_001: a · b ✓ tab\there", "q_001: a · b ✓ tab\there"),  # ordinary text unchanged
])
def test_escape_terminal_writes_controls_visibly_and_no_line_starts_a_command(text, expected):
    assert escape_terminal(text) == expected


def test_escape_terminal_keeps_the_lines_the_tool_laid_out_but_guards_each_start():
    text = "a\n::error::x\n  ::warning::y\r\n"
    assert escape_terminal(text, keep_newlines=True) == "a\n%3A:error::x\n  %3A:warning::y\\x0d\n"


def test_no_bidi_shows_every_override_and_isolate():
    text = "".join(chr(c) for c in [0x61c, 0x200e, 0x200f, *range(0x202a, 0x202f), *range(0x2066, 0x206a)])
    out = no_bidi(text)
    assert all(chr(c) not in out for c in range(0x202a, 0x202f)) and out.count("\\u") == len(text)
