"""A golden set and its knowledge base, loaded together and checked as one (dataset integrity, docs/decisions.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.filters import filter_problems
from retrieval_gate.load.cases import is_jsonl_cases, read_cases, stream_jsonl_cases
from retrieval_gate.load.kb import read_kb
from retrieval_gate.load.textfile import display, raise_if
from retrieval_gate.models import Case, CaseSet, KnowledgeBase

MissingGold = Literal["refuse", "score"]


def dataset_problems(
    *, cases: Path, kb: Path | None, missing_gold: MissingGold = "refuse",
) -> tuple[CaseSet | None, KnowledgeBase | None, list[Problem]]:
    """Load both, and list every problem in either file plus every gold id (of the cases that
    load) that does not resolve to a card. Gold ids are checked only against a KB that loaded
    without problems: a broken KB line would otherwise show up as a false 'not a card'.
    ``missing_gold="score"``: a gold id that names no card is no problem here — the card may have
    been deleted (``gold-removed``: a measured loss, ``eval``, ``score``, the action); it is scored
    (it stays in the case's denominator) and ``missing_gold_ids`` lists it. A gold id that is a
    chunk of a card is a problem either way (a labelling bug)."""
    case_set, problems = read_cases(cases)
    if case_set is not None:  # metadata filters in the Chroma where language (filters.py)
        problems = [*problems, *case_filter_problems(cases=case_set.cases, path=case_set.path, lines=case_set.lines)]
    loaded_kb = None
    if kb is not None:
        loaded_kb, kb_problems = read_kb(kb)
        problems = [*problems, *kb_problems]
        if case_set is not None and loaded_kb is not None and not kb_problems:
            problems.extend(integrity_problems(cases=case_set, kb=loaded_kb, missing_gold=missing_gold))
    return case_set, loaded_kb, problems


def load_dataset(*, cases: Path, kb: Path | None,
                 missing_gold: MissingGold = "refuse") -> tuple[CaseSet, KnowledgeBase | None]:
    """``dataset_problems`` that raises one InputError listing every problem found."""
    case_set, loaded_kb, problems = dataset_problems(cases=cases, kb=kb, missing_gold=missing_gold)
    raise_if(problems)
    if case_set is None:  # pragma: no cover - read_cases reports a problem whenever it returns None
        raise InputError(Problem(str(cases), None, "no cases"))
    return case_set, loaded_kb


@dataclass(frozen=True)
class DatasetCheck:
    """What ``validate`` reports of a dataset that passed: the counts, and the gold ids that name
    no card (``missing_gold_ids``' rows)."""

    cases: int
    with_gold: int
    cards: int
    missing: list[tuple[str, str, str, int | None]]


def check_dataset(*, cases: Path, kb: Path, missing_gold: MissingGold = "refuse") -> DatasetCheck:
    """``load_dataset`` and ``missing_gold_ids`` for a command that keeps no case (``validate``):
    the same problems (one InputError listing every one), but a JSONL golden set is checked a case
    at a time as it is read — the KB first, then each case's gold against it — so memory holds the
    KB and the cases' ids, never the file or its cases. A BEIR folder or a qrels file is loaded."""
    if not is_jsonl_cases(cases):
        case_set, loaded_kb = load_dataset(cases=cases, kb=kb, missing_gold=missing_gold)
        assert loaded_kb is not None
        return DatasetCheck(cases=len(case_set.cases), with_gold=sum(1 for c in case_set.cases if c.gold),
                            cards=len(loaded_kb.card_ids), missing=missing_gold_ids(cases=case_set, kb=loaded_kb))
    loaded_kb, problems = read_kb(kb)
    check_gold = loaded_kb is not None and not problems
    card_ids = loaded_kb.card_ids if loaded_kb is not None else frozenset()
    chunk_to_card = loaded_kb.chunk_to_card if loaded_kb is not None else {}
    where = display(cases)
    lines: dict[str, int] = {}
    n = with_gold = 0
    missing: list[tuple[str, str, str, int | None]] = []
    for number, case in stream_jsonl_cases(cases, problems, lines=lines):
        n += 1
        with_gold += bool(case.gold)
        problems.extend(case_filter_problems(cases=[case], path=where, lines={case.id: number}))
        for gold in case.gold if check_gold else ():
            if gold in card_ids:
                continue
            if (parent := chunk_to_card.get(gold)) is not None:
                problems.append(Problem(where, number, f"case {case.id!r}: gold id {gold!r} is a chunk of card "
                                                       f"{parent!r}; label the card id (card identity is parent_id)"))
            elif missing_gold == "refuse":
                problems.append(Problem(where, number, f"case {case.id!r}: gold id {gold!r} is not a card in "
                                                       f"{loaded_kb.path}"))  # type: ignore[union-attr]
            else:
                missing.append((where, case.id, gold, number))
    raise_if(problems)
    assert loaded_kb is not None
    return DatasetCheck(cases=n, with_gold=with_gold, cards=len(card_ids), missing=missing)


# --- Dataset integrity ------------------------------------------------------------------------
# Dataset integrity (docs/decisions.md): every gold id must resolve to a real KB card, so a labelling
# bug can never pass as a retrieval failure; every case filter must be valid before retrieval runs.

def integrity_problems(*, cases: CaseSet, kb: KnowledgeBase, missing_gold: MissingGold = "refuse") -> list[Problem]:
    """One problem per gold id that names no card (unless ``missing_gold="score"``) or names a
    chunk, located at the case's line."""
    card_ids = kb.card_ids
    chunk_to_card = kb.chunk_to_card
    problems = []
    where = cases.path if cases.format in ("jsonl", "qrels") else f"{cases.path}/queries.jsonl"
    for case in cases.cases:
        for gold in case.gold:
            if gold in card_ids:
                continue
            parent = chunk_to_card.get(gold)
            if parent is not None:
                message = (f"case {case.id!r}: gold id {gold!r} is a chunk of card {parent!r}; "
                           f"label the card id (card identity is parent_id)")
            elif missing_gold == "score":
                continue
            else:
                message = f"case {case.id!r}: gold id {gold!r} is not a card in {kb.path}"
            problems.append(Problem(where, cases.lines.get(case.id), message))
    return problems


def missing_gold_ids(*, cases: CaseSet, kb: KnowledgeBase) -> list[tuple[str, str, str, int | None]]:
    """``(file, case id, gold id, line)`` for every gold id that names no card of ``kb`` (nor a
    chunk of one): deleted cards, or ids that were never cards (a typo) — which, only a KB of
    before can tell (the baseline's KB manifest: ``compare``, ``validate``)."""
    card_ids, chunk_to_card = kb.card_ids, kb.chunk_to_card
    where = cases.path if cases.format in ("jsonl", "qrels") else f"{cases.path}/queries.jsonl"
    return [(where, case.id, gold, cases.lines.get(case.id)) for case in cases.cases for gold in case.gold
            if gold not in card_ids and gold not in chunk_to_card]


def case_filter_problems(*, cases: Sequence[Case], path: str, lines: Mapping[str, int]) -> list[Problem]:
    """One ``file:line`` problem per invalid ``filter`` in the cases (checked before any retrieval)."""
    out = []
    for case in cases:
        if case.filter is not None:
            for message in filter_problems(case.filter):
                out.append(Problem(path, lines.get(case.id), f"case {case.id!r}: {message}"))
    return out
