"""Two labellers of one draft (``label agree``, ``label apply A B``). Pure.

Each labeller's file gives a grade per (case, card) they judged; "no card answers this"
(``no_answer``) counts as grade 0 for every card the other labeller judged in that case. The
agreement is over the pairs both judged: Cohen's κ (scikit-learn's ``cohen_kappa_score``) of
their grades, overall and per intent, and the pairs where the grades differ. κ is 1.0 when both
gave one and the same grade to every pair (the formula's 0/0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from retrieval_gate.golden.decisions import Decision, NoAnswer

Record = Decision | NoAnswer


@dataclass(frozen=True)
class Judged:
    """One labeller's file: grade per (case, card), the cases said to have no answer, and the
    line each came from (for messages)."""

    grades: dict[tuple[str, str], int]
    no_answer: set[str]
    lines: dict[tuple[str, str], int]
    records: dict[tuple[str, str], Decision]


def judged(records: Sequence[tuple[int, Record]]) -> Judged:
    """A labeller's last word per pair (a later line replaces an earlier one)."""
    out = Judged({}, set(), {}, {})
    for line, r in records:
        if isinstance(r, NoAnswer):
            out.no_answer.add(r.case)
            out.lines[(r.case, "")] = line
        else:
            pair = (r.case, r.card)  # one key object for the three maps
            out.grades[pair] = r.grade
            out.lines[pair] = line
            out.records[pair] = r
    return out


def _grade(j: Judged, pair: tuple[str, str]) -> int | None:
    if pair in j.grades:
        return j.grades[pair]
    return 0 if pair[0] in j.no_answer else None


@dataclass
class Agreement:
    pairs: int = 0
    kappa: float | None = None
    by_intent: dict[str, tuple[int, float | None]] = field(default_factory=dict)
    disagree: list[tuple[str, str, int, int]] = field(default_factory=list)


def kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's κ of two raters' labels (None for no pairs; 1.0 when both used one label alike)."""
    if not a:
        return None
    if len(set(a) | set(b)) == 1:
        return 1.0
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(list(a), list(b)))


def agreement(a: Judged, *, b: Judged, intent_of: Mapping[str, str]) -> Agreement:
    """κ over the pairs both judged, overall and per intent (``intent_of``: case → intent)."""
    pairs = sorted({p for p in (*a.grades, *b.grades)
                    if _grade(a, p) is not None and _grade(b, p) is not None})
    out = Agreement(pairs=len(pairs))
    ga = [_grade(a, p) or 0 for p in pairs]
    gb = [_grade(b, p) or 0 for p in pairs]
    out.kappa = kappa(ga, gb)
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault(intent_of.get(p[0], "(none)"), []).append(i)
        if ga[i] != gb[i]:
            out.disagree.append((p[0], p[1], ga[i], gb[i]))
    out.by_intent = {name: (len(ix), kappa([ga[i] for i in ix], [gb[i] for i in ix]))
                     for name, ix in sorted(groups.items())}
    return out


Conflict = tuple[str, str, list[int | None]]


def reconcile(files: Sequence[Judged], *, prefer: int | None = None) -> tuple[list[Record], list[Conflict]]:
    """Two files (a third settles their disagreements; ``prefer``: the index of the one that
    wins them) → the records to apply, and the pairs still in conflict (case, card, grades)."""
    first, second = files[0], files[1]
    third = files[2] if len(files) > 2 else None
    pairs = sorted({*first.grades, *second.grades, *(third.grades if third else {})})
    merged: list[Record] = []
    conflicts: list[Conflict] = []
    relevant_cases: set[str] = set()
    for pair in pairs:
        grades = [_grade(j, pair) for j in files[:2]]
        given = [g for g in grades if g is not None]
        if len(set(given)) > 1:
            settled = _grade(third, pair) if third is not None else None
            if settled is None and prefer is not None:
                settled = grades[prefer]
            if settled is None:
                conflicts.append((pair[0], pair[1], grades))
                continue
            value = settled
        else:
            value = given[0] if given else _grade(third, pair) if third is not None else None
        if value is None:
            continue
        source = next(j.records[pair] for j in files if pair in j.records)
        merged.append(source.model_copy(update={"grade": value}))
        if value >= 1:
            relevant_cases.add(pair[0])
    said = set().union(*(j.no_answer for j in files))
    merged.extend(NoAnswer(case=c, no_answer=True) for c in sorted(said - relevant_cases))
    return merged, conflicts
