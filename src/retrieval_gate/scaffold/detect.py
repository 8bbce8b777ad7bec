"""Where a repository keeps its knowledge base and golden set, from a listing of its files (the
shell walks the tree; this module only reads names). Pure.

Recognised, as ``load/`` reads them: a BEIR folder (``corpus.jsonl`` + ``queries.jsonl`` + qrels;
both the KB and the cases), a JSONL golden set (``cases.jsonl``, ``golden*.jsonl``, ``*cases*.jsonl``),
a JSONL KB (``kb.jsonl``, ``cards.jsonl``, ``corpus.jsonl``, ``*kb*.jsonl``), and a folder of
Markdown / text cards named like a knowledge base (``kb/``, ``knowledge*/``, ``cards/``, …), and a
query log to draft a golden set from (``queries.txt``, ``*query*``/``*search*`` text, CSV or JSONL). When
none or several fit, :class:`Detection` says which, so the shell can ask (or name ``--kb`` / ``--cases``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

KB_FOLDER_NAMES = ("kb", "knowledge", "knowledge-base", "knowledge_base", "knowledgebase", "cards", "articles",
                   "help", "helpcenter", "help-center", "corpus", "content", "docs")
CARD_SUFFIXES = (".md", ".markdown", ".txt")
MIN_CARDS = 2  # a folder with one Markdown file is a README, not a knowledge base


@dataclass(frozen=True)
class Found:
    path: str  # relative, POSIX
    kind: str  # what it is, in words (the config's comment)


@dataclass
class Detection:
    kb: list[Found] = field(default_factory=list)
    cases: list[Found] = field(default_factory=list)
    logs: list[Found] = field(default_factory=list)  # query logs to draft a golden set from


LOG_SUFFIXES = (".txt", ".csv", ".tsv", ".jsonl", ".ndjson")


def _is_log_name(name: str) -> bool:
    """A query log: ``queries.txt``, ``query_log.csv``, ``search-log.jsonl``, …"""
    stem = name.rsplit(".", 1)[0].lower()
    return any(word in stem for word in ("query", "queries", "search")) and not _is_cases_name(name)


def _is_cases_name(name: str) -> bool:
    if name.lower().endswith(".not-relevant.jsonl"):  # the sidecar `label apply` keeps beside the cases
        return False
    stem = name.removesuffix(".jsonl").lower()
    return stem in ("cases", "golden", "gold", "eval", "evals", "questions") or "case" in stem or \
        stem.startswith(("golden", "gold_", "gold-", "eval_", "eval-"))


def _is_kb_name(name: str) -> bool:
    stem = name.removesuffix(".jsonl").lower()
    return stem in ("kb", "cards", "corpus", "knowledge", "docs", "documents", "passages") or \
        stem.startswith(("kb_", "kb-", "knowledge")) or stem.endswith(("_kb", "-kb", "_cards", "-cards"))


def detect(files: Iterable[str]) -> Detection:
    """The candidates for the KB and the cases among ``files`` (relative POSIX paths of regular
    files). Each list is sorted by preference: the shallowest, then by name."""
    paths = sorted({PurePosixPath(f) for f in files})
    by_folder: dict[PurePosixPath, set[str]] = {}
    for p in paths:
        by_folder.setdefault(p.parent, set()).add(p.name)
    found = Detection()
    beir = sorted(folder for folder, names in by_folder.items()
                  if {"corpus.jsonl", "queries.jsonl"} <= names
                  and ("qrels.tsv" in names or any(n.endswith(".tsv") for n in by_folder.get(folder / "qrels", ()))))
    for folder in beir:
        found.kb.append(Found(folder.as_posix(), "a BEIR folder (corpus.jsonl)"))
        found.cases.append(Found(folder.as_posix(), "a BEIR folder (queries.jsonl + qrels)"))
    inside_beir = {f for folder in beir for f in (folder, folder / "qrels")}
    for p in paths:
        if p.suffix != ".jsonl" or p.parent in inside_beir:
            continue
        if _is_cases_name(p.name):
            found.cases.append(Found(p.as_posix(), "JSONL cases"))
        elif _is_kb_name(p.name):
            found.kb.append(Found(p.as_posix(), "JSONL cards"))
    card_counts: dict[PurePosixPath, int] = {}
    for p in paths:
        if p.suffix.lower() in CARD_SUFFIXES and p.name.lower() not in ("readme.md", "license.txt", "changelog.md"):
            for folder in p.parents:
                if folder.name.lower() in KB_FOLDER_NAMES:
                    card_counts[folder] = card_counts.get(folder, 0) + 1
                    break
    for folder, n in card_counts.items():
        if n >= MIN_CARDS and folder not in beir:
            found.kb.append(Found(folder.as_posix(), f"a folder of {n} Markdown/text cards"))
    in_kb = {folder for folder in card_counts}
    found.logs = [Found(p.as_posix(), "a query log") for p in paths
                  if p.suffix.lower() in LOG_SUFFIXES and _is_log_name(p.name) and p.parent not in inside_beir
                  and not any(folder in in_kb for folder in p.parents)]
    found.kb.sort(key=_preference)
    found.cases.sort(key=_preference)
    found.logs.sort(key=_preference)
    return found


def _preference(f: Found) -> tuple[int, int, str]:
    p = PurePosixPath(f.path)
    # "docs/" is a common folder of project documentation, not always a KB: least preferred
    weak = 1 if p.name.lower() in ("docs", "content") else 0
    return (weak, len(p.parts), f.path)


def choose(candidates: list[Found]) -> Found | None:
    """The one candidate to use without asking, or None (none, or several equally likely)."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    first, second = candidates[0], candidates[1]
    return first if _preference(first)[:2] < _preference(second)[:2] else None
