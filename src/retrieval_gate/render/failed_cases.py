"""Why cases failed, for the terminal, the comment and the HTML report. Pure.

A failed case keeps its reason in the results (``cases[].error``: the retriever's exception, an
HTTP status, ``missing from the run``). Shown everywhere the count of failed cases is shown,
grouped by reason — a glue that raised ``KeyError: 'card_id'`` for 20 cases is one line, not
twenty — most frequent first, each reason on one line and cut (``clean_text``: controls, bidi
marks and line breaks become one space), with the first few case ids. Each renderer escapes the
text for where it goes: ``escape_terminal`` (no control character, no workflow command), the
comment's ``md_text`` (no mention, no Markdown) and the HTML report's autoescape.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval_gate.render.escape import clean_text
from retrieval_gate.score.results import Results

GROUPS = 3  # reasons shown
IDS = 3  # case ids shown per reason
REASON_CHARS = 160  # a reason cut to this many characters
ID_CHARS = 40
NO_REASON = "no reason recorded"


@dataclass(frozen=True)
class FailureGroup:
    reason: str  # one line, at most REASON_CHARS characters
    count: int
    ids: tuple[str, ...]  # the first IDS case ids, each at most ID_CHARS characters

    @property
    def more_ids(self) -> int:
        return self.count - len(self.ids)


@dataclass(frozen=True)
class Failures:
    groups: tuple[FailureGroup, ...]
    other_reasons: int  # reasons not shown
    other_cases: int  # the cases of those reasons


def failures(results: Results, *, groups: int = GROUPS, ids: int = IDS) -> Failures:
    """The failed cases of ``results`` grouped by reason: most cases first, then the reason
    first met; at most ``groups`` reasons with ``ids`` case ids each."""
    by_reason: dict[str, list[str]] = {}
    for case in results.cases:
        if case.status != "failed":
            continue
        reason = clean_text(case.error, max_len=REASON_CHARS) or NO_REASON
        by_reason.setdefault(reason, []).append(case.id)
    ordered = sorted(by_reason.items(), key=lambda item: -len(item[1]))  # stable: first met breaks ties
    shown = tuple(FailureGroup(reason=reason, count=len(case_ids),
                               ids=tuple(clean_text(i, max_len=ID_CHARS) for i in case_ids[:ids]))
                  for reason, case_ids in ordered[:groups])
    rest = ordered[groups:]
    return Failures(groups=shown, other_reasons=len(rest), other_cases=sum(len(c) for _, c in rest))


def failure_lines(results: Results) -> list[str]:
    """Plain lines (not yet escaped for a terminal): ``failed (3): REASON — en-001, en-002, en-031``."""
    found = failures(results)
    lines = []
    for group in found.groups:
        more = f" and {group.more_ids} more" if group.more_ids else ""
        lines.append(f"failed ({group.count}): {group.reason} — {', '.join(group.ids)}{more}")
    if found.other_reasons:
        lines.append(f"failed ({found.other_cases}): {found.other_reasons} other reason"
                     f"{'s' if found.other_reasons != 1 else ''} (cases[].error in the results file)")
    return lines
