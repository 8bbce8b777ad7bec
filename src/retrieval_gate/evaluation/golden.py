"""``label apply --draft``: labels of a drafted golden set written into the suite's golden set
(docs/golden-set.md). Every refusal comes before any write; every write is atomic and confined
to the repository; what was reported as written is read back and checked. The rules are
``audit.draft_cases`` and ``audit.agree``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_gate.artifacts.labels import not_relevant_path, read_not_relevant
from retrieval_gate.audit.agree import Record
from retrieval_gate.audit.coverage import best_case_mde
from retrieval_gate.audit.draft_cases import DraftEntry, DraftPlan, check_labels, plan_draft
from retrieval_gate.audit.label_queue import add_to_jsonl, add_to_qrels, not_relevant_lines
from retrieval_gate.errors import InputError, OutputError, Problem, UsageError
from retrieval_gate.files import confined, write_text_atomic
from retrieval_gate.load.cases import load_cases, qrels_path
from retrieval_gate.load.kb import load_kb
from retrieval_gate.load.textfile import display, read_bytes
from retrieval_gate.score.kb_manifest import kb_manifest

BOM = "\ufeff"


@dataclass
class Applied:
    plan: DraftPlan
    written: list[Path] = field(default_factory=list)
    intents: list[tuple[str, int, float]] = field(default_factory=list)  # intent, cases, MDE
    detect: float | None = None


def golden_format(cases: Path) -> str:
    """``jsonl`` (also for a path not there yet: it is created), ``beir``, or ``qrels``."""
    if not cases.exists():
        return "jsonl"
    return load_cases(cases).format


def refusals(files: Sequence[tuple[Path, Sequence[tuple[int, Record]]]], *, draft: Mapping[str, DraftEntry],
             kb: Path, cases: Path) -> list[Problem]:
    """Every ``labels.jsonl:LINE: …`` refusal of every labels file, before anything is written."""
    fmt = golden_format(cases)
    if fmt == "qrels":
        raise UsageError(f"{cases}: a bare qrels file holds no query text; give --cases a JSONL file or a BEIR folder")
    manifest = kb_manifest(load_kb(kb).cards)
    existing = {c.id for c in load_cases(cases).cases} if cases.exists() else set()
    return [Problem(display(path), line, why) for path, records in files
            for line, why in check_labels(records, draft=draft, manifest=manifest, existing=existing,
                                          line_based=fmt == "beir")]


def apply_draft(records: Sequence[Record], *, draft: Mapping[str, DraftEntry], cases: Path, labeller: str,
                date: str) -> Applied:
    """Write the new cases and the sidecar; read them back; the per-intent figures."""
    fmt = golden_format(cases)
    plan = plan_draft(records, draft=draft, labeller=labeller, date=date)
    if plan.additions:  # a top-up (``label top-up``): a card judged meanwhile is not added twice
        held = {c.id: set(c.grades or c.gold) for c in load_cases(cases).cases}
        plan.additions = [d for d in plan.additions if d.card not in held.get(d.case, set())]
    writes: list[tuple[Path, str]] = []
    if plan.cases or plan.additions:
        if fmt == "jsonl":
            before = _text(cases) if cases.exists() else ""
            before = add_to_jsonl(before, additions=plan.additions) if plan.additions else before
            writes.append((cases, _joined(before, "".join(_line(obj) for obj in plan.cases))))
        else:
            queries, qrels = cases / "queries.jsonl", qrels_path(cases)
            rows = [{"_id": o["id"], "text": o["query"], "metadata": {k: v for k, v in o.items()
                                                                      if k not in ("id", "query", "gold")}}
                    for o in plan.cases]
            if rows:
                writes.append((queries, _joined(_text(queries), "".join(_line(r) for r in rows))))
            sep = "\t"
            qlines = "".join(f"{o['id']}{sep}{card}{sep}{grade}\n" for o in plan.cases
                             for card, grade in _grades(o["gold"]).items())
            before = add_to_qrels(_text(qrels), additions=plan.additions) if plan.additions else _text(qrels)
            writes.append((qrels, _joined(before, qlines)))
    sidecar = not_relevant_path(cases)
    known = {(c, d) for c, d, _ in read_not_relevant(sidecar)}
    fresh = [d for d in plan.not_relevant if (d.case, d.card) not in known]
    if fresh:
        writes.append((sidecar, _joined(_text(sidecar) if sidecar.is_file() else "", not_relevant_lines(fresh))))
    for path, _ in writes:
        confined(path)  # every target checked before anything is written
    for path, text in writes:
        if path == cases and not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text=text)
    out = Applied(plan=plan, written=[p for p, _ in writes])
    out.detect = next((e.detect for e in draft.values() if e.detect is not None), None)
    if not cases.exists():  # nothing but "not relevant" judgements for a golden set still to come
        return out
    _verify(cases, plan=plan, sidecar=sidecar, fresh=len(fresh))
    by_intent = Counter(c.tags.get("intent", "(none)") for c in load_cases(cases).cases)
    out.intents = [(name, n, best_case_mde(n)) for name, n in sorted(by_intent.items())]
    return out


def _verify(cases: Path, *, plan: DraftPlan, sidecar: Path, fresh: int) -> None:
    """Every case reported added is in the golden set as loaded, with its gold."""
    loaded = {c.id: c for c in load_cases(cases).cases}
    for obj in plan.cases:
        case = loaded.get(obj["id"])
        if case is None or set(case.grades or dict.fromkeys(case.gold, 1)) != set(_grades(obj["gold"])):
            raise OutputError(Problem(str(cases), None, f"cannot write: case {obj['id']!r} is not in the golden set "
                                                        "as read back"))
    for d in plan.additions:
        case = loaded.get(d.case)
        if case is None or d.card not in set(case.grades or case.gold):
            raise OutputError(Problem(str(cases), None, f"cannot write: {d.case} {d.card} is not in the golden set "
                                                        "as read back"))
    if fresh and len(read_not_relevant(sidecar)) < fresh:
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
    """What the golden set can detect per intent, and which intents fall short of the draft's drop."""
    lines = []
    short = []
    for name, n, mde in applied.intents:
        lines.append(f"  {name}: {n} cases, smallest detectable drop {mde:.3f}")
        if applied.detect is not None and mde > applied.detect:
            short.append(name)
    if short and applied.detect is not None:
        lines.append(f"short of --detect {applied.detect:g}: {', '.join(short)} (draft again with --per-intent)")
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


def raise_refused(problems: list[Problem]) -> None:
    if problems:
        raise InputError(problems)
