"""A golden set and its knowledge base, loaded together and checked as one (dataset integrity, docs/decisions.md)."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.load.cases import read_cases
from retrieval_gate.load.integrity import case_filter_problems, integrity_problems
from retrieval_gate.load.kb import read_kb
from retrieval_gate.load.textfile import raise_if
from retrieval_gate.models import CaseSet, KnowledgeBase


def dataset_problems(*, cases: Path, kb: Path | None) -> tuple[CaseSet | None, KnowledgeBase | None, list[Problem]]:
    """Load both, and list every problem in either file plus every gold id (of the cases that
    load) that does not resolve to a card. Gold ids are checked only against a KB that loaded
    without problems: a broken KB line would otherwise show up as a false 'not a card'."""
    case_set, problems = read_cases(cases)
    if case_set is not None:  # metadata filters in the Chroma where language (filters.py)
        problems = [*problems, *case_filter_problems(cases=case_set.cases, path=case_set.path, lines=case_set.lines)]
    loaded_kb = None
    if kb is not None:
        loaded_kb, kb_problems = read_kb(kb)
        problems = [*problems, *kb_problems]
        if case_set is not None and loaded_kb is not None and not kb_problems:
            problems.extend(integrity_problems(cases=case_set, kb=loaded_kb))
    return case_set, loaded_kb, problems


def load_dataset(*, cases: Path, kb: Path | None) -> tuple[CaseSet, KnowledgeBase | None]:
    """``dataset_problems`` that raises one InputError listing every problem found."""
    case_set, loaded_kb, problems = dataset_problems(cases=cases, kb=kb)
    raise_if(problems)
    if case_set is None:  # pragma: no cover - read_cases reports a problem whenever it returns None
        raise InputError(Problem(str(cases), None, "no cases"))
    return case_set, loaded_kb
