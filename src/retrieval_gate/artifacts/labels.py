"""The sidecar of "not relevant" decisions (written by ``retrieval-gate label apply``, read back by
the labelling queue and by the audit's Judged@k): ``cases.not-relevant.jsonl`` beside a
``cases.jsonl`` (or qrels) file, ``not-relevant.jsonl`` inside a BEIR folder; one
``{"case", "card", "sha", "at"}`` a line (docs/reports.md "Labelling")."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.errors import Problem
from retrieval_gate.load.textfile import display, iter_json_objects, raise_if

NOT_RELEVANT_SUFFIX = ".not-relevant.jsonl"
NOT_RELEVANT_IN_FOLDER = "not-relevant.jsonl"


def not_relevant_path(cases: Path) -> Path:
    """Where a golden set's "not relevant" decisions are kept."""
    cases = Path(cases)
    return cases / NOT_RELEVANT_IN_FOLDER if cases.is_dir() else cases.with_name(cases.stem + NOT_RELEVANT_SUFFIX)


def read_not_relevant(path: Path) -> list[tuple[str, str, str]]:
    """The sidecar's ``(case, card, sha)`` entries, in file order (none when the file is absent)."""
    if not path.is_file():
        return []
    problems: list[Problem] = []
    out = []
    for number, obj in iter_json_objects(path, problems):
        if not all(isinstance(obj.get(key), str) for key in ("case", "card", "sha")):
            problems.append(Problem(display(path), number, 'expected "case", "card" and "sha" strings'))
            continue
        out.append((obj["case"], obj["card"], obj["sha"]))
    raise_if(problems)
    return out


def not_relevant_by_case(cases: Path) -> dict[str, set[str]]:
    """Case id → the cards kept "not relevant" for it, from the sidecar beside ``cases``."""
    out: dict[str, set[str]] = {}
    for case, card, _ in read_not_relevant(not_relevant_path(cases)):
        out.setdefault(case, set()).add(card)
    return out
