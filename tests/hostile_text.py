"""The one hostile corpus every printer is fed (ids, titles, queries, file names, config keys,
paths), and the check of what reached stdout/stderr: no line the runner would take for a workflow
command unless the tool issued it, and no control character a terminal would obey."""

from __future__ import annotations

import re

ESC_ATTACKS = ("\x1b[2J\x1b[H", "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\", "\x1b[31mred\x1b[0m",
               "\u202eevil\u202c", "\x9b31m", "\x07\x08\r")
COMMAND_ATTACKS = ("\n::error file=src/app.py,line=1::INJECTED-CARD-ID",
                   "\n::add-mask::ghs_\n::stop-commands::pwn", "\n  ::warning::INJECTED", "\r\n::error::INJECTED",
                   "##[add-mask]ghs_", "\n::notice title=x::INJECTED")
MARKUP_ATTACKS = ("[link=https://evil.example]click[/link]", "[bold red]loud[/bold red]")  # rich markup
CORPUS = tuple(f"x{i}{attack}" for i, attack in enumerate(COMMAND_ATTACKS + ESC_ATTACKS + MARKUP_ATTACKS))

# The commands the tool itself issues: a known name, escaped properties (no raw ':' or ','), the message.
OWN_COMMAND = re.compile(r"::(warning|error|notice)( (file|line|title)=[^:,\n]*(,(file|line|title)=[^:,\n]*)*)?::")
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def assert_no_command_from_text(*texts: str) -> None:
    """Every line that the runner would take for a command is one the tool issues itself (the
    runner trims leading spaces; its older ``##[`` form counts anywhere), and no control character
    but a line feed or tab is written."""
    for text in texts:
        for line in text.split("\n"):
            if line.lstrip().startswith("::"):
                assert OWN_COMMAND.match(line.lstrip()), line
            assert "##[" not in line, line
        assert not CONTROLS.search(text), repr(text)
