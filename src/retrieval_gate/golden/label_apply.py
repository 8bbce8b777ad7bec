"""``label apply``: a labels file (or two labellers' and a third) merged into the suite's golden
set, in sittings (docs/golden-set.md): judgements it already holds are counted, new ones merged
into the cases that exist (or, with a draft, make new cases), stale ones set aside in
``stale.jsonl``, conflicting ones refused unless ``--prefer new|old``. Every refusal comes before
any write; every write is atomic and confined to the repository; what was reported as written is
read back and checked. The rules are ``golden.sittings``, ``golden.draft_entry`` and ``golden.agreement``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_gate.artifacts.label_sidecar import (
    current_not_relevant,
    iter_not_relevant,
    not_relevant_path,
    read_not_relevant,
)
from retrieval_gate.audit.coverage import best_case_mde
from retrieval_gate.errors import InputError, OutputError, Problem, UsageError
from retrieval_gate.files import confined, write_chunks_atomic, write_text_atomic
from retrieval_gate.golden.agreement import Record, judged, reconcile
from retrieval_gate.golden.decisions import Decision, NoAnswer, not_relevant_lines
from retrieval_gate.golden.draft_entry import DraftEntry, DraftPlan, plan_draft
from retrieval_gate.golden.label_page import MAX_GRADE
from retrieval_gate.golden.labels_file import read_stale, stale_path
from retrieval_gate.golden.sittings import (
    Held,
    Ids,
    Merge,
    Pairs,
    Prefer,
    Stale,
    Where,
    edit_jsonl,
    edit_qrels,
    merge,
    replace_gone,
    sort_file,
    strict_problems,
)
from retrieval_gate.load.cases import load_cases, qrels_path
from retrieval_gate.load.kb import load_kb
from retrieval_gate.load.textfile import display, raise_if, read_bytes
from retrieval_gate.models import CaseSet, judgements
from retrieval_gate.score.kb_manifest import judged_as_is, kb_manifest

BOM = "\ufeff"

LabelFiles = Sequence[tuple[Path, Sequence[tuple[int, Record]]]]


@dataclass
class Applied:
    merge: Merge
    plan: DraftPlan | None = None
    written: list[Path] = field(default_factory=list)
    intents: list[tuple[str, int, float]] = field(default_factory=list)  # intent, cases, MDE
    detect: float | None = None
    already: int = 0
    stale: list[Stale] = field(default_factory=list)
    superseded: int = 0
    stale_file: Path | None = None
    unlabelled: dict[str, int] = field(default_factory=dict)  # intent → drafted queries nobody labelled yet
    judged_nothing: int = 0  # drafted queries judged with no card relevant and no "no answer"
    waiting_stale: int = 0  # drafted queries not in the golden set with a judgement set aside as stale
    stale_kept: int = 0  # the entries stale.jsonl holds after this run (earlier sittings' too)
    systems: list[str] = field(default_factory=list)  # the draft's pool systems
    still_orphaned: dict[str, list[str]] = field(default_factory=dict)  # re-judged with no card relevant: gone ids kept


def golden_format(cases: Path) -> str:
    """``jsonl`` (also for a path not there yet: it is created), ``beir``, or ``qrels``."""
    if not cases.exists():
        return "jsonl"
    return load_cases(cases).format


def scale_of(case_set: CaseSet | None) -> int:
    """The top grade a labels file may give: 1 (binary) unless the golden set holds a grade above
    1, then the labelling page's top grade or the golden set's, whichever is higher."""
    top = max((g for c in case_set.cases for g in judgements(c).values()), default=1) if case_set else 1
    return 1 if top <= 1 else max(MAX_GRADE, top)


def agree_problems(files: LabelFiles, *, draft: Mapping[str, DraftEntry] | None, cases: Path | None) -> list[Problem]:
    """``label agree``'s refusals: each file strict on its own (grades on the scale of ``cases``,
    the labelling page's widest without it; ids of the draft when given)."""
    scale = scale_of(load_cases(cases)) if cases is not None and cases.exists() else MAX_GRADE
    ids = Ids(pool={e.id: {c.card: c.sha for c in e.candidates} for e in draft.values()}) if draft else None
    return [Problem(display(path), line, why) for path, records in files
            for line, why in strict_problems(records, scale=scale, ids=ids)]


def apply_labels(files: LabelFiles, *, draft: Mapping[str, DraftEntry] | None, draft_path: Path | None, kb: Path,
                 cases: Path, prefer: Prefer | None, prefer_labeller: int | None, labeller: str,
                 date: str) -> Applied:
    """Check every file, sort, reconcile and merge its judgements, write, read back."""
    fmt = golden_format(cases)
    if draft is not None and fmt == "qrels":
        raise UsageError(f"{cases}: a bare qrels file holds no query text; give --cases a JSONL file or a BEIR folder")
    case_set = load_cases(cases) if cases.exists() else None
    if case_set is None and draft is None:
        raise UsageError(f"{cases}: no such golden set (label apply without --draft adds to one)")
    sha_now = {card: m.sha for card, m in kb_manifest(load_kb(kb).cards).items()}
    sidecar = not_relevant_path(cases)
    side = read_not_relevant(sidecar)
    kept: dict[tuple[str, str], tuple[str, ...]] = {}  # a tuple, not a set: ~50 bytes a pair, not ~220
    for case, card, sha in current_not_relevant(side, sha_now=sha_now):  # a stale entry judges nothing
        if sha not in (shas := kept.get((case, card), ())):
            kept[(case, card)] = (*shas, sha)
    held = Held(gold={c.id: judgements(c) for c in case_set.cases} if case_set else {}, not_relevant=kept)
    pool = {e.id: {c.card: c.sha for c in e.candidates} for e in draft.values()} if draft is not None else None
    ids = Ids(pool=pool) if pool is not None else Ids(cases=set(held.gold))
    scale = scale_of(case_set)
    problems = [Problem(display(path), line, why) for path, records in files
                for line, why in strict_problems(records, scale=scale, ids=ids, line_based=fmt != "jsonl")]
    if draft is not None:  # a top-up adds to the cases the golden set holds
        problems += [Problem(display(path), line, f"case {r.case!r} is not in the golden set (a top-up adds to the "
                                                  "cases it holds): draft it again with cases draft")
                     for path, records in files for line, r in records
                     if (e := draft.get(r.case)) is not None and e.top_up and r.case not in held.gold]
    if problems:
        raise InputError(problems)
    parts = [sort_file(records, shown=display(path), held=held, sha_now=sha_now, pool=pool) for path, records in files]
    current = _reconciled(files, [p.current for p in parts], prefer_labeller=prefer_labeller)
    merged = merge(current, held=held, sha_now=sha_now, prefer=prefer)
    if merged.conflicts:
        raise InputError([Problem(shown, line, why) for (shown, line), why in merged.conflicts])
    still_orphaned = replace_gone(merged, held=held, sha_now=sha_now,
                                  replaces={e.id: e.replaces for e in (draft or {}).values() if e.replaces},
                                  judged={r.case for _, recs in files for _, r in recs})
    out = Applied(merge=merged, already=sum(p.already for p in parts) + merged.already,
                  stale=[s for p in parts for s in p.stale], superseded=sum(p.superseded for p in parts),
                  still_orphaned=still_orphaned)
    out.stale_file = stale_path(draft=draft_path, labels=files[0][0])
    writes: list[tuple[Path, str | Iterator[str]]] = []
    writes += _golden_writes(cases, fmt=fmt, merged=merged, draft=draft, out=out, labeller=labeller, date=date)
    drop = _dropped(side, merged=merged)
    if drop or merged.not_relevant:  # written as it is made: a million entries are never one string
        writes.append((sidecar, _sidecar_chunks(sidecar, drop=drop, add=merged.not_relevant)))
    judged_now = parts[0].judged_now if len(parts) == 1 else Pairs(pair for p in parts for pair in p.judged_now)
    if (stale_text := _stale_text(out.stale_file, new=out.stale, judged_now=judged_now)) is not None:
        writes.append((out.stale_file, stale_text))
    for path, _ in writes:
        confined(path)  # every target checked before anything is written
    for path, text in writes:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, str):
            write_text_atomic(path, text=text)
        else:
            write_chunks_atomic(path, chunks=text)
    out.written = [p for p, _ in writes]
    # earlier sittings' set-aside judgements still wait there too, unless the golden set judges the
    # pair now (another draft's sitting, a top-up, judged it again)
    waiting = read_stale(out.stale_file)
    judged_pairs = _judged_now(cases, sidecar=sidecar, sha_now=sha_now,
                               among={(o["case_id"], o["card_id"]) for o in waiting}) if waiting else set()
    kept_stale = [o for o in waiting if (o["case_id"], o["card_id"]) not in judged_pairs]
    out.stale_kept = len(kept_stale)
    if draft is not None:
        out.detect = next((e.detect for e in draft.values() if e.detect is not None), None)
        out.systems = sorted({s for e in draft.values() if e.pool for s in e.pool.systems})
    judged_cases = {r.case for _, recs in files for _, r in recs} | {case for case, _, _ in side}
    if not cases.exists():  # nothing but "not relevant" judgements for a golden set still to come
        _count_drafted(out, draft=draft or {}, after=None, judged=judged_cases, kept_stale=kept_stale)
        return out
    after = load_cases(cases)
    _verify(after, cases=cases, merged=merged, plan=out.plan, sidecar=sidecar)
    _count_drafted(out, draft=draft or {}, after=after, judged=judged_cases, kept_stale=kept_stale)
    if draft is not None:
        by_intent = Counter(c.tags.get("intent", "(none)") for c in after.cases)
        out.intents = [(name, n, best_case_mde(n)) for name, n in sorted(by_intent.items())]
    return out


def _reconciled(files: LabelFiles, current: Sequence[Sequence[tuple[int, Record]]], *,
                prefer_labeller: int | None) -> Iterable[tuple[Where, Record]]:
    """One file's current judgements with where they came from (made one at a time as the merge
    reads them); two labellers' reconciled (a third file or ``prefer_labeller`` settles their
    disagreements, else exit 2 naming them)."""
    if len(files) == 1:
        shown = display(files[0][0])
        return (((shown, line), r) for line, r in current[0])
    sets = [judged(recs) for recs in current]
    records, conflicts = reconcile(sets, prefer=prefer_labeller)
    first = display(files[0][0])
    if conflicts:
        raise InputError([Problem(first, sets[0].lines.get((case, card)) or sets[0].lines.get((case, "")),
                                  f"{case} {card}: the labellers disagree (grades {' vs '.join(map(str, grades))}); "
                                  "a third file or --prefer A|B settles it") for case, card, grades in conflicts])
    out: list[tuple[Where, Record]] = []
    for r in records:
        pair = (r.case, "") if isinstance(r, NoAnswer) else (r.case, r.card)
        i = next((i for i, s in enumerate(sets) if pair in s.lines), 0)
        out.append(((display(files[i][0]), sets[i].lines.get(pair, 0)), r))
    return out


def _golden_writes(cases: Path, *, fmt: str, merged: Merge, draft: Mapping[str, DraftEntry] | None, out: Applied,
                   labeller: str, date: str) -> list[tuple[Path, str]]:
    """The golden set's files with the merge: gold edited in place, new cases appended."""
    writes: list[tuple[Path, str]] = []
    new: list[dict] = []
    if draft is not None:
        out.plan = plan_draft(merged.new_cases, draft=draft, labeller=labeller, date=date)
        new = out.plan.cases
    edits = bool(merged.set_gold or merged.remove_gold)
    if fmt == "jsonl" and (edits or new):
        before = _text(cases) if cases.exists() else ""
        text = edit_jsonl(before, set_gold=merged.set_gold, remove_gold=merged.remove_gold) if edits else before
        writes.append((cases, _joined(text, "".join(_line(obj) for obj in new))))
    elif edits or new:
        if new:
            queries = cases / "queries.jsonl"
            rows = [{"_id": o["id"], "text": o["query"], "metadata": {k: v for k, v in o.items()
                                                                      if k not in ("id", "query", "gold")}}
                    for o in new]
            writes.append((queries, _joined(_text(queries), "".join(_line(r) for r in rows))))
        qrels = qrels_path(cases)
        grades = {case: dict(cards) for case, cards in merged.set_gold.items()}
        for obj in new:
            grades.setdefault(obj["id"], {}).update(_grades(obj["gold"]))
        writes.append((qrels, edit_qrels(_text(qrels), set_gold=grades, remove_gold=merged.remove_gold)))
    return writes


def _dropped(side: Sequence[tuple[str, str, str]], *, merged: Merge) -> set[tuple[str, str]]:
    """The sidecar's pairs this merge judges again (a "not relevant" judgement replaces the pair's
    earlier entries, a relevant grade takes them out): a set of the smaller side's pairs, the
    sidecar's or the merge's, looked up by the other's."""
    if not side or not (merged.not_relevant or merged.unrelevant):
        return set()
    if len(merged.not_relevant) + len(merged.unrelevant) <= len(side):
        judged = {(d.case, d.card) for d in merged.not_relevant} | merged.unrelevant
        return {(case, card) for case, card, _ in side if (case, card) in judged}
    there = {(case, card) for case, card, _ in side}
    return {(d.case, d.card) for d in merged.not_relevant if (d.case, d.card) in there} | (merged.unrelevant & there)


CHUNK_LINES = 10_000


def _sidecar_chunks(sidecar: Path, *, drop: set[tuple[str, str]], add: Sequence[Decision]) -> Iterator[str]:
    """The sidecar less its entries for ``drop`` (a pair judged again), plus ``add``; other lines
    kept byte for byte. Made a piece at a time as it is written: the sidecar read a line at a time,
    the new lines ``CHUNK_LINES`` at a time."""
    ends_line = True
    if sidecar.is_file():
        try:
            handle = open(sidecar, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise InputError(Problem(display(sidecar), None, f"cannot read: {exc.strerror}")) from None
        with handle:
            kept: list[str] = []
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(Problem(display(sidecar), number,
                                             f"invalid UTF-8 (byte {exc.start + 1} of the line)")) from None
                try:
                    obj = json.loads(line.lstrip(BOM))
                except ValueError:
                    obj = None
                if isinstance(obj, dict) and (obj.get("case"), obj.get("card")) in drop:
                    continue
                kept.append(line)
                ends_line = line.endswith("\n")
                if len(kept) >= CHUNK_LINES:
                    yield "".join(kept)
                    kept = []
            yield "".join(kept)
    if not ends_line:
        yield "\n"
    for start in range(0, len(add), CHUNK_LINES):
        yield not_relevant_lines(add[start:start + CHUNK_LINES])


def _stale_text(path: Path, *, new: Sequence[Stale], judged_now: Collection[tuple[str, str]]) -> str | None:
    """``stale.jsonl``: the earlier entries less the pairs judged again at the card's content now,
    plus the new ones (one per case, card and judged hash; the latest wins), sorted. None when
    there is nothing to write."""
    entries = {(o["case_id"], o["card_id"], o["judged_sha"]): o for o in read_stale(path)
               if (o["case_id"], o["card_id"]) not in judged_now}
    for s in new:
        entries[(s.decision.case, s.decision.card, s.decision.sha)] = s.as_json()
    text = "".join(json.dumps(entries[key], ensure_ascii=False, sort_keys=True) + "\n" for key in sorted(entries))
    if not path.is_file():
        return text or None
    return None if text == _text(path) else text


def _judged_now(cases: Path, *, sidecar: Path, sha_now: Mapping[str, str],
                among: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
    """The pairs of ``among`` the golden set judges now: in its gold at any grade, or a current
    entry of the sidecar (read a line at a time)."""
    problems: list[Problem] = []
    pairs = {(case, card) for case, card, sha in iter_not_relevant(sidecar, problems)
             if (case, card) in among and judged_as_is(card, sha, sha_now)}
    raise_if(problems)
    if cases.exists():
        pairs |= {(c.id, card) for c in load_cases(cases).cases for card in judgements(c) if (c.id, card) in among}
    return pairs


def _count_drafted(out: Applied, *, draft: Mapping[str, DraftEntry], after: CaseSet | None, judged: set[str],
                   kept_stale: Sequence[Mapping[str, object]] = ()) -> None:
    """The drafted queries not in the golden set: nobody labelled them yet, or a judgement of
    theirs waits set aside as stale (this file's or an earlier sitting's in ``stale.jsonl``; both
    per intent: what is still to label), or every card was judged not relevant without "no answer"."""
    there = {c.id for c in after.cases} if after is not None else set()
    waiting = {s.decision.case for s in out.stale} | {str(o["case_id"]) for o in kept_stale}
    for entry in draft.values():
        intent = entry.intent or "(none)"
        out.unlabelled.setdefault(intent, 0)
        if entry.id in there:
            continue
        if entry.id in waiting:
            out.waiting_stale += 1
            out.unlabelled[intent] += 1
        elif entry.id in judged:
            out.judged_nothing += 1
        else:
            out.unlabelled[intent] += 1


def _verify(after: CaseSet, *, cases: Path, merged: Merge, plan: DraftPlan | None, sidecar: Path) -> None:
    """Every judgement reported applied is in the golden set as loaded."""
    loaded = {c.id: judgements(c) for c in after.cases}
    wrong = [f"{case} {card}" for case, cards in merged.set_gold.items() for card, grade in cards.items()
             if loaded.get(case, {}).get(card) != grade]
    wrong += [f"{case} {card}" for case, cards in merged.remove_gold.items() for card in cards
              if card in loaded.get(case, {}) and card not in merged.set_gold.get(case, {})]
    for obj in plan.cases if plan else []:
        if obj["id"] not in loaded or {c for c, g in loaded[obj["id"]].items() if g >= 1} != set(_grades(obj["gold"])):
            wrong.append(f"case {obj['id']}")
    if wrong:
        raise OutputError(Problem(str(cases), None, f"cannot write: {len(wrong)} judgement(s) not in the golden set "
                                                    f"as read back (first: {wrong[0]})"))
    # the new entries were written after the kept ones, in order: found in order as the sidecar is
    # read back a line at a time (nothing of it held)
    problems: list[Problem] = []
    todo = iter(merged.not_relevant)
    want = next(todo, None)
    for entry in iter_not_relevant(sidecar, problems):
        if want is not None and entry == (want.case, want.card, want.sha):
            want = next(todo, None)
    raise_if(problems)
    if want is not None:
        raise OutputError(Problem(str(sidecar), None,
                                  "cannot write: the not-relevant entries are not there as read back"))


def _grades(gold: object) -> dict[str, int]:
    return dict(gold) if isinstance(gold, dict) else dict.fromkeys(gold, 1)  # type: ignore[arg-type]


def _line(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=False) + "\n"


def _text(path: Path) -> str:
    return read_bytes(path).decode("utf-8")


def _joined(before: str, added: str) -> str:
    """``before`` (a BOM kept where it was) with ``added`` lines after its last line."""
    if before and not before.endswith("\n"):
        before += "\n"
    return before + added


def intent_lines(applied: Applied) -> list[str]:
    """What the golden set can detect per intent, and for an intent short of the draft's drop its
    real shortfall: drafted queries not labelled yet (label them), or none left (draft more)."""
    figures = {name: (n, mde) for name, n, mde in applied.intents}
    lines, short = [], []
    for name in sorted({*figures, *applied.unlabelled}):
        n, mde = figures.get(name, (0, None))
        waiting = applied.unlabelled.get(name, 0)
        lines.append(f"  {name}: {n} cases" + (f", smallest detectable drop {mde:.3f}" if mde is not None else "")
                     + (f", {waiting} drafted queries not labelled yet" if waiting else ""))
        if applied.detect is not None and (mde is None or mde > applied.detect):
            short.append(name)
    if applied.detect is None or not short:
        return lines
    waiting = [f"{name} ({applied.unlabelled[name]} not labelled yet)" for name in short
               if applied.unlabelled.get(name)]
    drawn = [name for name in short if not applied.unlabelled.get(name)]
    if waiting:
        lines.append(f"short of --detect {applied.detect:g}: {', '.join(waiting)}: label those queries first")
    if drawn:
        lines.append(f"short of --detect {applied.detect:g} with every drafted query labelled: {', '.join(drawn)} "
                     "(draft more for them: cases draft --per-intent)")
    return lines


def pool_lines(plan: DraftPlan, *, systems: Sequence[str] = ()) -> list[str]:
    """Per system: relevant cards it found, and how many no other system found."""
    out = []
    for system in sorted({*systems, *plan.unique}):
        found, only = plan.unique.get(system, (0, 0))
        share = 1 - (found / plan.relevant) if plan.relevant else 0.0
        out.append(f"  {system}: found {found} of {plan.relevant} relevant cards, {only} that no other system found "
                   f"(a pool of {system} alone would miss {share:.0%})")
    return out
