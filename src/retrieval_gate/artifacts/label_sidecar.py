"""The sidecar of "not relevant" decisions (written by ``retrieval-gate label apply``, read back by
the labelling queue and by the audit's Judged@k): ``cases.not-relevant.jsonl`` beside a
``cases.jsonl`` (or qrels) file, ``not-relevant.jsonl`` inside a BEIR folder; one
``{"case", "card", "sha", "at"}`` a line (docs/reports.md "Labelling")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.compare.label_queue import label_queue, snippets
from retrieval_gate.errors import Problem
from retrieval_gate.load.kb import load_kb
from retrieval_gate.load.textfile import display, iter_json_objects, raise_if
from retrieval_gate.score.kb_manifest import kb_manifest

if TYPE_CHECKING:
    from retrieval_gate.compare.label_queue import QueueItem
    from retrieval_gate.compare.model import Comparison
    from retrieval_gate.models import KnowledgeBase
    from retrieval_gate.score.results import Results

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
    texts: dict[str, str] = {}  # its ids and hashes repeat line after line: each held once
    for number, obj in iter_json_objects(path, problems=problems, stream=True):
        if not all(isinstance(obj.get(key), str) for key in ("case", "card", "sha")):
            problems.append(Problem(display(path), number, 'expected "case", "card" and "sha" strings'))
            continue
        case, card, sha = (texts.setdefault(obj[key], obj[key]) for key in ("case", "card", "sha"))
        out.append((case, card, sha))
    raise_if(problems)
    return out


def not_relevant_by_case(cases: Path) -> dict[str, set[str]]:
    """Case id → the cards kept "not relevant" for it, from the sidecar beside ``cases``."""
    out: dict[str, set[str]] = {}
    for case, card, _ in read_not_relevant(not_relevant_path(cases)):
        out.setdefault(case, set()).add(card)
    return out


def queue_for(*, comparison: Comparison, kb: KnowledgeBase, cases_path: Path) -> list[QueueItem]:
    """The labelling queue of ``comparison``'s unjudged cases over this KB, less the pairs the
    sidecar beside ``cases_path`` keeps as not relevant (while the card is unchanged)."""
    manifest = kb_manifest(kb.cards)
    decided = {(case, card) for case, card, sha in read_not_relevant(not_relevant_path(cases_path))
               if card in manifest and manifest[card].sha == sha}
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
