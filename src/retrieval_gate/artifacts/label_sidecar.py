"""The sidecar of "not relevant" decisions (written by ``retrieval-gate label apply``, read back by
the labelling queue and by the audit's Judged@k): ``cases.not-relevant.jsonl`` beside a
``cases.jsonl`` (or qrels) file, ``not-relevant.jsonl`` inside a BEIR folder; one
``{"case", "card", "sha", "at"}`` a line (docs/reports.md "Labelling").

An entry judges the card at the content hash it carries: once the card is edited (or gone) the
entry is stale like any other judgement (``score.kb_manifest.judged_as_is``) and judges nothing —
for scoring (``unjudged@k``), the audit's Judged@k, ``label top-up`` and ``label apply`` alike
(``current_not_relevant``, the one filter all of them read the sidecar through)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.compare.label_queue import label_queue, snippets
from retrieval_gate.errors import Problem
from retrieval_gate.load.kb import load_kb
from retrieval_gate.load.textfile import display, iter_json_objects, raise_if
from retrieval_gate.score.kb_manifest import judged_as_is, kb_manifest

if TYPE_CHECKING:
    from retrieval_gate.compare.label_queue import QueueItem
    from retrieval_gate.compare.model import Comparison
    from retrieval_gate.models import CaseSet, KnowledgeBase
    from retrieval_gate.score.results import Results

NOT_RELEVANT_SUFFIX = ".not-relevant.jsonl"
NOT_RELEVANT_IN_FOLDER = "not-relevant.jsonl"


def not_relevant_path(cases: Path) -> Path:
    """Where a golden set's "not relevant" decisions are kept."""
    cases = Path(cases)
    return cases / NOT_RELEVANT_IN_FOLDER if cases.is_dir() else cases.with_name(cases.stem + NOT_RELEVANT_SUFFIX)


def read_not_relevant(path: Path) -> list[tuple[str, str, str]]:
    """The sidecar's ``(case, card, sha)`` entries, in file order (none when the file is absent)."""
    problems: list[Problem] = []
    out = []
    texts: dict[str, str] = {}  # its ids and hashes repeat line after line: each held once
    for case, card, sha in iter_not_relevant(path, problems):
        out.append((texts.setdefault(case, case), texts.setdefault(card, card), texts.setdefault(sha, sha)))
    raise_if(problems)
    return out


def iter_not_relevant(path: Path, problems: list[Problem]) -> Iterator[tuple[str, str, str]]:
    """``read_not_relevant``'s entries one at a time as the file is read (none when it is absent);
    a line that is not an entry is added to ``problems`` (the caller raises them)."""
    if not path.is_file():
        return
    for number, obj in iter_json_objects(path, problems=problems, stream=True):
        if not all(isinstance(obj.get(key), str) for key in ("case", "card", "sha")):
            problems.append(Problem(display(path), number, 'expected "case", "card" and "sha" strings'))
            continue
        yield obj["case"], obj["card"], obj["sha"]


def current_not_relevant(entries: Sequence[tuple[str, str, str]], *,
                         sha_now: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """The sidecar's entries that still judge their card: judged at the card's content hash now
    (``score.kb_manifest.judged_as_is``); an entry of a card edited since, or gone, is stale."""
    return [(case, card, sha) for case, card, sha in entries if judged_as_is(card, sha, sha_now)]


def sha_now_of(kb: KnowledgeBase) -> dict[str, str]:
    """Card id → its content hash now (``score.kb_manifest``)."""
    return {card: m.sha for card, m in kb_manifest(kb.cards).items()}


def not_relevant_by_case(cases: Path, *, kb: KnowledgeBase | None) -> dict[str, set[str]]:
    """Case id → the cards kept "not relevant" for it, from the sidecar beside ``cases``: the
    current entries over ``kb`` (``current_not_relevant``). Without a KB (``score --run`` with no
    ``--kb``) nothing says a card changed, and every entry counts — as the gold does."""
    entries = read_not_relevant(not_relevant_path(cases))
    if entries and kb is not None:
        entries = current_not_relevant(entries, sha_now=sha_now_of(kb))
    out: dict[str, set[str]] = {}
    for case, card, _ in entries:
        out.setdefault(case, set()).add(card)
    return out


def golden_judgements(case_set: CaseSet) -> str:
    """How the golden set was judged when its suite does not say (``compare.judgements``):
    ``pooled`` where it carries pool provenance — a non-empty "not relevant" sidecar beside it, or
    cases written by ``label apply`` from a draft —, else ``complete``."""
    sidecar = not_relevant_path(Path(case_set.path))
    if case_set.pooled or (sidecar.is_file() and sidecar.stat().st_size > 0):
        return "pooled"
    return "complete"


def queue_for(*, comparison: Comparison, kb: KnowledgeBase, cases_path: Path) -> list[QueueItem]:
    """The labelling queue of ``comparison``'s unjudged cases over this KB, less the pairs the
    sidecar beside ``cases_path`` keeps as not relevant (while the card is unchanged)."""
    manifest = kb_manifest(kb.cards)
    sha_now = {card: m.sha for card, m in manifest.items()}
    decided = {(case, card) for case, card, _ in current_not_relevant(read_not_relevant(not_relevant_path(cases_path)),
                                                                       sha_now=sha_now)}
    return label_queue(changes=comparison.changed_cases, manifest=manifest, snippet=snippets(kb.cards),
                       decided=decided)


def report_queue(*, results: Results, comparison: Comparison | None, kb: Path | None = None) -> list[QueueItem] | None:
    """The HTML report's cards to label: only when a case's cause is ``unjudged`` and the KB is at
    hand (``kb``, else the path the results name, when it is still there); None otherwise."""
    if comparison is None or not any(c.cause == "unjudged" for c in comparison.changed_cases):
        return None
    recorded, cases = results.inputs.get("kb"), results.inputs.get("cases")
    kb_path = kb if kb is not None else Path(recorded.path) if recorded is not None else None
    if kb_path is None or not kb_path.exists() or cases is None:
        return None

    return queue_for(comparison=comparison, kb=load_kb(kb_path), cases_path=Path(cases.path))
