"""Dataset integrity (docs/decisions.md): every gold id must resolve to a real KB card, so a labelling
bug can never pass as a retrieval failure; every case filter must be valid before retrieval runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrieval_gate.errors import Problem
from retrieval_gate.filters import filter_problems
from retrieval_gate.models import Case, CaseSet, KnowledgeBase


def integrity_problems(*, cases: CaseSet, kb: KnowledgeBase) -> list[Problem]:
    """One problem per gold id that names no card, located at the case's line."""
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
            else:
                message = f"case {case.id!r}: gold id {gold!r} is not a card in {kb.path}"
            problems.append(Problem(where, cases.lines.get(case.id), message))
    return problems


def case_filter_problems(*, cases: Sequence[Case], path: str, lines: Mapping[str, int]) -> list[Problem]:
    """One ``file:line`` problem per invalid ``filter`` in the cases (checked before any retrieval)."""
    out = []
    for case in cases:
        if case.filter is not None:
            for message in filter_problems(case.filter):
                out.append(Problem(path, lines.get(case.id), f"case {case.id!r}: {message}"))
    return out
