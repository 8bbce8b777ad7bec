"""Escaping of user data (case ids, queries, slice values, card ids, config values) for the
Markdown comment, and the small sanitisers the charts need. Pure functions.

``md_text`` is the one Markdown escaper: every user string that reaches the comment or the job
summary goes through it (the templates apply it automatically to every ``{{ … }}`` that is not
already marked safe). Its output is safe anywhere inline — in a table cell, a list item, a
heading, inside ``<details>`` — because:

- control characters, bidi overrides and line breaks become one space (no new lines, so no new
  table rows, list items or headings; no reordered text);
- characters with Markdown or HTML meaning become numeric character references, which CommonMark
  treats as literal text, never as syntax: ``& < > | ` * ~ [ ] \\ $``, and ``_`` unless it sits alone between two
  letters or digits (``q_001``) (and a leading
  ``# + - =`` or the ``.``/``)`` after leading digits, which would start a block);
- the forges' reference filters run after Markdown and see decoded text, so entities cannot stop
  them: ``@name`` (a mention that pings; GitLab's usernames may start with ``_`` or ``.``, and
  Azure DevOps mentions ``@<id>``), ``#123`` / ``GH-123`` (issue and work-item links that post a
  back-reference), GitLab's ``!12`` (merge requests), ``&7`` (epics), ``~label``, ``%milestone``
  and ``$12`` (snippets), and bare URLs (``https://…``, ``www.…``) get a zero-width character
  inserted after the sigil, which breaks the pattern and reads the same.
"""

from __future__ import annotations

import re

from markupsafe import Markup

ZWJ = "\u200d"  # zero-width joiner: invisible, breaks @mentions and #123 references
ZWSP = "\u200b"  # zero-width space: breaks bare-URL autolinks

_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "|": "&#124;",
    "`": "&#96;",
    "*": "&#42;",
    "~": "&#126;",
    "[": "&#91;",
    "]": "&#93;",
    "\\": "&#92;",
    "$": "&#36;",
}
_ENTITY_RE = re.compile("[" + re.escape("".join(_ENTITIES)) + "]")
# A lone underscore between two letters or digits (``q_001``) can neither open nor close emphasis;
# every other underscore is encoded.
_UNDERSCORE_RE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# C0/C1 controls, DEL, line/paragraph separators, bidi embeddings/overrides/isolates, BOM.
_SPACE_RE = re.compile("[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\\s]+")
# A mention: ASCII \W before; a letter or digit after (GitHub), ``_`` or ``.`` (GitLab), ``<`` (Azure DevOps).
_MENTION_RE = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9_.<])")
_ISSUE_RE = re.compile(r"#(?=\d)")
# GitLab's references: !12 merge request, &7 epic, ~label / ~"two words", %milestone, $12 snippet.
_GITLAB_REF_RE = re.compile(r"([!&$])(?=\d)|([~%])(?=[\w\"])")
_GH_RE = re.compile(r"(?i)\b(GH)(?=-\d)")
_URL_RE = re.compile(r"(?i)(:)(//)|\b(www)(\.)")
_LEADING_BLOCK_RE = re.compile(r"^([#+\-=])|^(\d+)([.)])(?=\s|$)")


def clean_text(text: object, *, max_len: int | None = None) -> str:
    """Plain text on one line: controls, bidi marks and runs of whitespace → one space, trimmed;
    cut to ``max_len`` characters (the last one ``…``) when longer. No escaping."""
    out = _SPACE_RE.sub(" ", "" if text is None else str(text)).strip()
    if max_len is not None and len(out) > max_len:
        out = out[: max(max_len - 1, 0)].rstrip() + "…"
    return out


def md_text(text: object, *, max_len: int | None = None) -> Markup:
    """Escape user data for inline Markdown (see the module docstring). ``max_len`` cuts the
    plain text before escaping, so an entity is never split."""
    out = clean_text(text, max_len=max_len)
    # GitHub's filters first, on plain text (an entity such as &#124; must not be touched).
    out = _MENTION_RE.sub("@" + ZWJ, out)
    out = _ISSUE_RE.sub("#" + ZWJ, out)
    out = _GITLAB_REF_RE.sub(lambda m: (m.group(1) or m.group(2)) + ZWJ, out)
    out = _GH_RE.sub(lambda m: m.group(1) + ZWJ, out)
    out = _URL_RE.sub(_break_url, out)
    out = _ENTITY_RE.sub(lambda m: _ENTITIES[m.group(0)], out)
    out = _UNDERSCORE_RE.sub("&#95;", out)
    out = _LEADING_BLOCK_RE.sub(_leading_block, out, count=1)
    return Markup(out)


def _leading_block(match: re.Match[str]) -> str:
    if match.group(1):
        return f"&#{ord(match.group(1))};"
    return match.group(2) + f"&#{ord(match.group(3))};"


def _break_url(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(1) + ZWSP + match.group(2)
    return match.group(3) + ZWSP + match.group(4)


_LABEL_RE = re.compile(r"[^A-Za-z0-9._ -]+")


def chart_label(text: object, *, max_len: int = 12) -> str:
    """A label safe inside a fenced Mermaid block or a quoted string: only ``[A-Za-z0-9._ -]``
    (entities are not decoded in code blocks, so we restrict instead of escaping)."""
    out = _LABEL_RE.sub("-", clean_text(text)).strip("- ")
    return out[:max_len] or "?"


def marker_suite(suite: object) -> str:
    """The suite name as it appears in the hidden marker: ``[A-Za-z0-9._/:-]`` kept, anything
    else (spaces, ``>``, quotes…) → ``_``, so the marker is one stable HTML comment."""
    out = re.sub(r"[^A-Za-z0-9._/:-]", "_", clean_text(suite)).replace("--", "-_")
    return out or "default"


# --- text for a terminal or a CI log (stdout / stderr) ----------------------------------------
#
# ``escape_terminal`` is the one escaper for every line the CLI or the action writes to stdout/stderr that
# can hold user or pull-request text. A terminal must never receive a control character it would
# obey (ESC starts colour, clear-screen, OSC-8 hyperlinks, title changes; bidi overrides reorder
# what is read), and a GitHub runner parses every line of stdout and stderr for workflow commands:
# a line starting (after spaces) with ``::`` (``::error file=…::``, ``::add-mask::``,
# ``::stop-commands::``) or holding ``##[`` anywhere (the runner's older command form); an Azure
# DevOps agent obeys ``##vso[`` (logging commands: set a variable, upload a file) and ``##[``
# (formatting: ``##[error]``) anywhere in a line, in any case. So:
#
# - control characters (C0 but tab, DEL, C1), bidi embeddings/overrides/isolates and marks, line
#   and paragraph separators, the BOM and lone surrogates (a file name that is not UTF-8) are
#   written visibly, as ``\x1b``, ``\u202e``, ``\udce9`` — never emitted; a line feed too unless
#   the caller keeps line structure (``keep_newlines``: text this tool laid out);
# - a line that would start with ``::`` gets its first colon written ``%3A`` (GitHub's own escape),
#   ``##[`` becomes ``##%5B`` and ``##vso[`` becomes ``##vso%5B``: only the commands the tool itself issues
#   (``publish/runner.workflow_command``) start a line with ``::``.

_SHOWN_RE = re.compile("[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029"
                       "\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_SHOWN_KEEP_NL_RE = re.compile("[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029"
                               "\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
# A line start, past spaces and the colour codes (SGR) rich writes on a terminal.
_COMMAND_START_RE = re.compile(r"^((?:\s|\x1b\[[0-9;]*m)*):(?=:)", re.MULTILINE)
_OLD_COMMAND_RE = re.compile(r"##(vso)?\[", re.IGNORECASE)
_BIDI_RE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_terminal(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` safe to write to a terminal or a CI log (see above): controls written visibly,
    no line able to start a workflow command. Carriage returns are always shown (``\\x0d``)."""
    return escape_commands(escape_controls(text, keep_newlines=keep_newlines))


def escape_controls(text: object, *, keep_newlines: bool = False) -> str:
    """Only the first half of ``escape_terminal``: control characters written visibly."""
    pattern = _SHOWN_KEEP_NL_RE if keep_newlines else _SHOWN_RE
    return pattern.sub(_visible, "" if text is None else str(text))


def escape_commands(text: str) -> str:
    """Only the second half of ``escape_terminal``: no line of ``text`` starts a workflow command."""
    return _COMMAND_START_RE.sub(r"\1%3A", _OLD_COMMAND_RE.sub(lambda m: f"##{m.group(1) or ''}%5B", text))


def no_bidi(text: object) -> str:
    """``text`` with bidi embeddings, overrides, isolates and marks written visibly (``\\u202e``):
    for the HTML report, where they would reorder what a reader sees."""
    return _BIDI_RE.sub(_visible, "" if text is None else str(text))
