"""The labelling loop's files read back: ``labels.jsonl`` (a reviewer's decisions, from the HTML
report or the labelling page) and ``stale.jsonl`` (the judgements ``label apply`` set aside because
their card was edited since, docs/golden-set.md "Sittings"); each problem as ``file:line``."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from retrieval_gate.errors import Problem, UsageError
from retrieval_gate.golden.agreement import Record
from retrieval_gate.golden.decisions import Decision, NoAnswer
from retrieval_gate.load.textfile import display, iter_json_objects, raise_if, validation_problems

STALE_FILE = "stale.jsonl"
_SHARED_TEXT = ("case", "card", "sha", "at", "labeller")


def read_decisions(path: Path) -> list[tuple[int, Record]]:
    """The records of a labels file: decisions, and (from the drafting page) no-answer words.

    Read as a stream (one line in memory at a time, ``textfile.stream_lines``), and kept lean: a
    labels file repeats its case ids, card ids, content hashes and labeller on every line, so each
    distinct text is held once; a decision is a slotted record (``Decision``), a no-answer word a
    pydantic model whose ``fields_set`` is shared by every one of the same fields."""
    if not path.is_file():
        raise UsageError(f"{path}: no such labels file")
    problems: list[Problem] = []
    out: list[tuple[int, Record]] = []
    texts: dict[str, str] = {}
    fields_sets: dict[frozenset[str], set[str]] = {}
    for number, obj in iter_json_objects(path, problems=problems, stream=True):
        if "no_answer" in obj and ("card" in obj or "grade" in obj):
            problems.append(Problem(display(path), number, "'no_answer' and a card's grade in one line: keep one"))
            continue
        try:
            record = NoAnswer.model_validate(obj) if "no_answer" in obj else Decision.model_validate(obj)
        except ValidationError as exc:
            problems.extend(validation_problems(path, line=number, exc=exc))
            continue
        if isinstance(record, Decision):
            record = Decision(*(texts.setdefault(v, v) if isinstance(v, str) else v
                                for v in (record.case, record.card, record.grade, record.sha, record.at,
                                          record.labeller)))
        else:
            values = record.__dict__
            for name in _SHARED_TEXT:
                if isinstance(value := values.get(name), str):
                    values[name] = texts.setdefault(value, value)
            given = record.__pydantic_fields_set__
            object.__setattr__(record, "__pydantic_fields_set__", fields_sets.setdefault(frozenset(given), given))
        out.append((number, record))
    if not out and not problems:
        problems.append(Problem(display(path), None, "no decisions: the labels file is empty"))
    raise_if(problems)
    return out


def stale_path(*, draft: Path | None, labels: Path) -> Path:
    """Where ``label apply`` sets aside judgements of cards edited since: ``stale.jsonl`` in the
    draft's folder, else beside the (first) labels file."""
    return (draft if draft is not None else labels).parent / STALE_FILE


def read_stale(path: Path) -> list[dict]:
    """The set-aside judgements (``{"case_id", "card_id", "judged_sha", "kb_sha", "pool_sha",
    "judgement"}`` a line, docs/golden-set.md "Sittings"), in file order; none when absent."""
    if not path.is_file():
        return []
    problems: list[Problem] = []
    out = []
    for number, obj in iter_json_objects(path, problems=problems):
        if not all(isinstance(obj.get(key), str) for key in ("case_id", "card_id", "judged_sha")) or not isinstance(
                obj.get("judgement"), dict):
            problems.append(Problem(display(path), number,
                                    'expected "case_id", "card_id" and "judged_sha" strings and a "judgement" object'))
            continue
        out.append(obj)
    raise_if(problems)
    return out


def read_stale_pairs(path: Path) -> list[tuple[str, str]]:
    """``stale.jsonl`` as ``label top-up --stale`` reads it (the pairs to offer again): ``(case, card)`` pairs
    from each line's ``case_id`` and ``card_id`` (or ``case`` and ``card``); problems as ``file:line``."""
    if not path.is_file():
        raise UsageError(f"{path}: no such stale file (label apply writes it beside the draft)")
    problems: list[Problem] = []
    out = []
    for number, obj in iter_json_objects(path, problems=problems):
        case, card = obj.get("case_id", obj.get("case")), obj.get("card_id", obj.get("card"))
        if not isinstance(case, str) or not isinstance(card, str) or not case or not card:
            problems.append(Problem(display(path), number, 'expected "case_id" and "card_id" strings'))
            continue
        out.append((case, card))
    raise_if(problems)
    return out
