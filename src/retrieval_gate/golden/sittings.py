"""Labelling in sittings (``label apply``, docs/golden-set.md "Sittings"): a labels file checked
against the draft, the KB now and the golden set as it is, then merged into it. Pure.

A labels file is strict: a grade is an integer on the scale (``0``…``scale``), one grade per
(case, card, sha), "no answer" and a relevant card never both for one case, every id the draft's
(or, without a draft, the golden set's cases). Each judgement that passes is then

- **already applied** when the golden set holds it (the gold's grade for the pair; grade 0: the
  sidecar holds the pair at this sha) — a second download of the page re-sends every judgement;
- **stale** when its ``sha`` is not the KB card's hash now (or the card is gone): it judged content
  that is no longer there, so it is set aside (``stale.jsonl``) for the next top-up, and only it;
- **in conflict** when the golden set holds another grade for the pair at the card's content now:
  refused unless ``prefer`` says whose word stands (``new``: the file's, ``old``: the golden set's);
- **new** otherwise: applied.

"No answer" is a judgement of the case: already applied when the case is in the golden set with no
relevant card, in conflict when it holds relevant ones (and a relevant card for a no-answer case).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from retrieval_gate.golden.agreement import Record
from retrieval_gate.golden.decisions import Decision, NoAnswer
from retrieval_gate.golden.draft_entry import bad_id
from retrieval_gate.models import GOLD_FIELDS
from retrieval_gate.score.kb_manifest import judged_as_is

Prefer = Literal["new", "old"]
Where = tuple[str, int]  # the labels file as shown, the line


@dataclass(frozen=True)
class Held:
    """What the golden set holds: its cases' judged cards with their grades (list gold: 1), and the
    sidecar's "not relevant" pairs with the hashes they were judged at (any case: a drafted query
    judged with no card relevant keeps its sidecar entries before it is a case)."""

    gold: Mapping[str, Mapping[str, int]]
    not_relevant: Mapping[tuple[str, str], Collection[str]]

    def holds(self, d: Decision) -> bool:
        """The golden set holds this very judgement (the gold has no hash: its grade is enough)."""
        if d.card in self.gold.get(d.case, {}):
            return self.gold[d.case][d.card] == d.grade
        return d.grade == 0 and d.sha in self.not_relevant.get((d.case, d.card), ())

    def grade_now(self, case: str, card: str, sha_now: str) -> int | None:
        """The golden set's grade of the pair at the card's content now, if it judges it."""
        if card in self.gold.get(case, {}):
            return self.gold[case][card]
        return 0 if sha_now in self.not_relevant.get((case, card), ()) else None

    def relevant(self, case: str) -> list[str]:
        return sorted(card for card, grade in self.gold.get(case, {}).items() if grade >= 1)


@dataclass(frozen=True)
class Ids:
    """Whose ids a labels file may name: a draft's (case → its pool, card → sha), else the golden
    set's cases (a card gone from the KB is stale, not refused: one deleted card never refuses a
    whole file)."""

    pool: Mapping[str, Mapping[str, str]] | None = None
    cases: Collection[str] = ()


def scale_words(scale: int) -> str:
    return "0 (not relevant) or 1 (relevant)" if scale == 1 else f"0 (not relevant) to {scale}"


def strict_problems(records: Sequence[tuple[int, Record]], *, scale: int, ids: Ids | None,
                    line_based: bool = False) -> list[tuple[int, str]]:
    """The refusals (line, reason) of one labels file on its own: grades off the scale, ids it may
    not name, two grades for one (case, card, sha), "no answer" beside a relevant card."""
    out: list[tuple[int, str]] = []
    for line, r in records:
        if isinstance(r, Decision) and r.grade > scale:
            out.append((line, f"grade {r.grade} is off the scale: expected {scale_words(scale)}"))
        if ids is not None:
            out.extend((line, why) for why in _id_problems(r, ids))
        if line_based:
            for kind, value in (("case", r.case), ("card", getattr(r, "card", ""))):
                if bad_id(value):
                    out.append((line, f"{kind} id {value!r} holds whitespace or a control character: "
                                      "a qrels line cannot hold it"))
    first: dict[tuple[str, str, str], tuple[int, int]] = {}  # the first (grade, line) of each judgement
    grades: dict[tuple[str, str, str], dict[int, int]] = {}  # only judgements given two grades: a dict each
    relevant: dict[str, list[int]] = {}
    said_none: dict[str, list[int]] = {}
    for line, r in records:
        if isinstance(r, NoAnswer):
            said_none.setdefault(r.case, []).append(line)
            continue
        key = (r.case, r.card, r.sha)
        grade, at = first.setdefault(key, (r.grade, line))
        if grade != r.grade:
            grades.setdefault(key, {grade: at}).setdefault(r.grade, line)
        if r.grade >= 1:
            relevant.setdefault(r.case, []).append(line)
    del first
    for (case, card, _), by_grade in grades.items():
        if len(by_grade) > 1:
            said = ", ".join(f"{g} at line {n}" for g, n in sorted(by_grade.items(), key=lambda item: item[1]))
            out.extend((n, f"{case} {card}: two grades for one card of one query ({said}): keep one")
                       for n in by_grade.values())
    for case, lines in said_none.items():
        if case in relevant:
            out.extend((n, f"{case}: 'no answer' (line {', '.join(map(str, lines))}) beside a card judged relevant "
                           f"(line {', '.join(map(str, relevant[case]))}): keep one") for n in lines)
    return sorted(set(out))


def _id_problems(r: Record, ids: Ids) -> list[str]:
    if ids.pool is not None:
        if r.case not in ids.pool:
            return [f"case {r.case!r} is not in the draft"]
        if isinstance(r, Decision) and r.card not in ids.pool[r.case]:
            return [f"card {r.card!r} is not in the pool of {r.case!r}"]
        return []
    if isinstance(r, NoAnswer):
        return ["a no-answer label belongs to a draft: give --draft"]
    if r.case not in ids.cases:
        return [f"case {r.case!r} is not in the golden set"]
    return []


@dataclass(frozen=True)
class Stale:
    """A judgement of a card whose content changed since (``kb_sha`` None: the card is gone)."""

    where: Where
    decision: Decision
    kb_sha: str | None
    pool_sha: str | None

    def as_json(self) -> dict[str, object]:
        d = self.decision
        return {"case_id": d.case, "card_id": d.card, "judged_sha": d.sha, "kb_sha": self.kb_sha,
                "pool_sha": self.pool_sha, "judgement": d.model_dump(mode="json")}


class Pairs:
    """(case, card) pairs held as case → card → the grade first seen: a set of pairs without a tuple
    per pair (a labels file of 870,000 judgements: ~45 bytes a pair, not ~95; docs/performance.md,
    "Memory of large inputs")."""

    __slots__ = ("by_case",)

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        self.by_case: dict[str, dict[str, int]] = {}
        for case, card in pairs:
            self.by_case.setdefault(case, {}).setdefault(card, 0)

    def __contains__(self, pair: object) -> bool:
        case, card = pair  # type: ignore[misc]
        return card in self.by_case.get(case, ())

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((case, card) for case, cards in self.by_case.items() for card in cards)

    def __len__(self) -> int:
        return sum(map(len, self.by_case.values()))

    def __or__(self, other: Iterable[tuple[str, str]]) -> Pairs:
        out = Pairs(self)
        for case, card in other:
            out.by_case.setdefault(case, {}).setdefault(card, 0)
        return out


@dataclass
class Sorted:
    """One labels file's judgements sorted: the current ones (to reconcile and merge), how many
    the golden set already holds, the stale ones, and the stale ones the file judges again."""

    current: list[tuple[int, Record]] = field(default_factory=list)
    already: int = 0
    stale: list[Stale] = field(default_factory=list)
    superseded: int = 0
    judged_now: Pairs = field(default_factory=Pairs)  # pairs judged at the content now


def sort_file(records: Sequence[tuple[int, Record]], *, shown: str, held: Held, sha_now: Mapping[str, str],
              pool: Mapping[str, Mapping[str, str]] | None) -> Sorted:
    """Already applied / stale / current, each judgement once (a line repeated counts once).

    A judgement at the card's content now is told from a repeat by its pair and grade alone (its
    hash is the card's now), kept in ``judged_now``; only stale ones and a pair given a second
    grade need a key of their own. ``current`` holds the records' own items, not copies."""
    out = Sorted()
    now_grades = out.judged_now.by_case
    seen: set[tuple[str | int, ...]] = set()  # stale judgements, and a pair judged now at a second grade
    said_none: set[str] = set()
    stale: list[Stale] = []
    for item in records:
        line, r = item
        if isinstance(r, NoAnswer):
            if r.case in said_none:
                continue
            said_none.add(r.case)
            if r.case in held.gold and not held.relevant(r.case):
                out.already += 1
            else:
                out.current.append(item)
            continue
        now, current = sha_now.get(r.card), judged_as_is(r.card, r.sha, sha_now)
        if current:
            cards = now_grades.setdefault(r.case, {})
            first = cards.get(r.card)
            if first is None:
                cards[r.card] = r.grade
            elif first == r.grade:
                continue  # the same judgement again
            elif (key := (r.case, r.card, r.sha, r.grade)) in seen:  # a second grade (strict_problems refuses it)
                continue
            else:
                seen.add(key)
        else:
            key = (r.case, r.card, r.sha, r.grade)
            if key in seen:
                continue
            seen.add(key)
        if held.holds(r):
            out.already += 1
        elif not current:
            stale.append(Stale(where=(shown, line), decision=r, kb_sha=now,
                               pool_sha=(pool or {}).get(r.case, {}).get(r.card)))
        else:
            out.current.append(item)
    out.stale = [s for s in stale if (s.decision.case, s.decision.card) not in out.judged_now]
    out.superseded = len(stale) - len(out.stale)
    return out


@dataclass
class Merge:
    """What applying current judgements does to the golden set: grades set in a case's gold
    (case → card → grade ≥ 1), cards taken out of a case's gold, "not relevant" judgements for the
    sidecar (each replaces the pair's earlier entries), the records that make new cases (a draft's
    queries not in the golden set yet), conflicts refused, and how they were settled."""

    set_gold: dict[str, dict[str, int]] = field(default_factory=dict)
    remove_gold: dict[str, set[str]] = field(default_factory=dict)
    not_relevant: list[Decision] = field(default_factory=list)
    unrelevant: set[tuple[str, str]] = field(default_factory=set)  # sidecar pairs a relevant grade replaces
    new_cases: list[Record] = field(default_factory=list)
    conflicts: list[tuple[Where, str]] = field(default_factory=list)
    replaced: int = 0
    kept_old: int = 0
    already: int = 0


def merge(records: Iterable[tuple[Where, Record]], *, held: Held, sha_now: Mapping[str, str],
          prefer: Prefer | None) -> Merge:
    """Merge current judgements (each pair once: reconciled already) into what the golden set holds."""
    out = Merge()
    for where, r in records:
        if isinstance(r, NoAnswer):
            theirs = held.relevant(r.case) if r.case in held.gold else []
            if r.case not in held.gold:
                out.new_cases.append(r)
            elif not theirs:
                out.already += 1
            elif _settled(out, where, prefer, f"{r.case}: 'no answer' here, the golden set holds relevant "
                                                  f"{', '.join(theirs)} for it"):
                out.remove_gold.setdefault(r.case, set()).update(theirs)
            continue
        existing = held.grade_now(r.case, r.card, sha_now[r.card])
        if existing is None and r.case in held.gold and r.grade >= 1 and not held.relevant(r.case):
            conflict = f"{r.case} {r.card}: relevant here, the golden set holds {r.case} as a no-answer case"
        elif existing is None or existing == r.grade:
            conflict = ""
            if existing is not None:
                out.already += 1
                continue
        else:
            conflict = f"{r.case} {r.card}: grade {r.grade} here, the golden set holds grade {existing}"
        if conflict and not _settled(out, where, prefer, conflict):
            continue
        _take(out, r, held=held)
    return out


def replace_gone(out: Merge, *, held: Held, replaces: Mapping[str, Collection[str]], judged: Collection[str],
                 sha_now: Mapping[str, str]) -> dict[str, list[str]]:
    """An orphaned case re-judged (``label top-up --orphaned``): the gone gold ids its draft line
    names (``replaces``) are taken out of its gold when this sitting judged the case (``judged``)
    and it now holds a relevant card the KB holds (one this merge adds or one already there); an id
    back in the KB stays. Adds to ``out.remove_gold``; returns case → the gone ids kept (no card
    judged relevant: the case is still orphaned)."""
    kept: dict[str, list[str]] = {}
    for case, ids in replaces.items():
        gone = sorted(card for card in ids if card not in sha_now and held.gold.get(case, {}).get(card, 0) >= 1)
        if case not in judged or not gone:
            continue
        removed = out.remove_gold.get(case, set())
        now = {c for c in held.relevant(case) if c not in removed} | {
            c for c, g in out.set_gold.get(case, {}).items() if g >= 1}
        if any(card in sha_now for card in now):
            out.remove_gold.setdefault(case, set()).update(gone)
        else:
            kept[case] = gone
    return kept


def _settled(out: Merge, where: Where, prefer: Prefer | None, conflict: str) -> bool:
    """True when the file's judgement is to be applied over the golden set's."""
    if prefer == "new":
        out.replaced += 1
        return True
    if prefer == "old":
        out.kept_old += 1
        return False
    out.conflicts.append((where, f"{conflict}: --prefer new applies this file's, --prefer old keeps the golden set's"))
    return False


def _take(out: Merge, d: Decision, *, held: Held) -> None:
    if d.case not in held.gold:
        out.new_cases.append(d)
        if d.grade == 0:
            out.not_relevant.append(d)
        else:
            out.unrelevant.add((d.case, d.card))
        return
    if d.grade == 0:
        out.not_relevant.append(d)
        if d.card in held.gold[d.case]:
            out.remove_gold.setdefault(d.case, set()).add(d.card)
    else:
        out.set_gold.setdefault(d.case, {})[d.card] = d.grade
        out.unrelevant.add((d.case, d.card))


def edit_jsonl(text: str, *, set_gold: Mapping[str, Mapping[str, int]],
               remove_gold: Mapping[str, Collection[str]]) -> str:
    """The JSONL golden set with each case's gold edited in place: cards added or regraded (a list
    stays a list while every grade is 1, else it turns graded, ``{card: grade}``, the old cards at
    1), cards taken out. Other lines are kept byte for byte; an edited line keeps its key order,
    its field name (``gold`` or an alias), its BOM and its line ending."""
    import json

    lines = text.split("\n")
    for i, line in enumerate(lines):
        stripped = line.strip().lstrip("\ufeff")  # a BOM before the first line: read as the loader reads it
        if not stripped.startswith("{"):
            continue
        obj = json.loads(stripped)
        if not isinstance(obj, dict):
            continue
        case = str(obj.get("id"))
        sets, removes = set_gold.get(case, {}), set(remove_gold.get(case, ()))
        if not sets and not removes:
            continue
        key = next((name for name in GOLD_FIELDS if name in obj), "gold")  # the field the line uses
        gold = obj.get(key) or []
        graded = dict.fromkeys(map(str, gold), 1) if isinstance(gold, list) else dict(gold)
        for card in removes:
            graded.pop(card, None)
        graded.update(sets)
        obj[key] = ([c for c in map(str, gold) if c in graded] + [c for c in sets if c not in gold]
                    if isinstance(gold, list) and all(g == 1 for g in graded.values()) else graded)
        lines[i] = (("\ufeff" if line.startswith("\ufeff") else "") + json.dumps(obj, ensure_ascii=False)
                    + ("\r" if line.endswith("\r") else ""))
    return "\n".join(lines)


def edit_qrels(text: str, *, set_gold: Mapping[str, Mapping[str, int]],
               remove_gold: Mapping[str, Collection[str]]) -> str:
    """The qrels file with each judgement set (its line's grade changed, or a new line in the
    file's own layout: BEIR's ``query-id corpus-id score`` or TREC's ``query 0 doc grade``, tab-
    or space-separated) or taken out (its lines dropped). Other lines are kept byte for byte."""
    todo = {(case, card): grade for case, cards in set_gold.items() for card, grade in cards.items()}
    gone = {(case, card) for case, cards in remove_gold.items() for card in cards}
    out: list[str] = []
    sample = "q\td\t1"
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        parts = body.split()
        if (not body.strip() or body.lstrip().startswith("#") or len(parts) not in (3, 4)
                or not parts[-1].lstrip("-").isdigit()):  # a header line, a comment
            out.append(line)
            continue
        sample = body
        pair = (parts[0], parts[-2])
        if pair in gone:
            continue
        if pair in todo:
            grade = todo.pop(pair)
            sep = "\t" if "\t" in body else " "
            line = sep.join([*parts[:-1], str(grade)]) + line[len(body):]
        out.append(line)
    sep = "\t" if "\t" in sample else " "
    trec = len(sample.split()) == 4
    head = "".join(out)
    if head and not head.endswith("\n"):
        head += "\n"
    return head + "".join(sep.join([case, "0", card, str(g)] if trec else [case, card, str(g)]) + "\n"
                          for (case, card), g in todo.items())
