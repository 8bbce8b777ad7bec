"""Golden sets: a JSONL file of cases, or a BEIR folder (``queries.jsonl`` + ``qrels.tsv``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import sha256_bytes, sha256_path
from retrieval_gate.load.boundary import id_problem, quote
from retrieval_gate.load.subset_manifest import read_subset_manifest
from retrieval_gate.load.textfile import (
    display,
    iter_lines,
    raise_if,
    read_bytes,
    validated_records,
)
from retrieval_gate.models import ANSWER_FIELDS, GOLD_FIELDS, Case, CaseSet

# Fields of the seeds' golden-set format that are documentation or slicing, not scoring.
_TAGGED_FIELDS = ("type", "difficulty", "split")  # split: dev|heldout|… (issue 14: the audit reads it)


def load_cases(path: Path) -> CaseSet:
    """Load cases from a JSONL file or a BEIR folder; raise InputError listing every problem."""
    case_set, problems = read_cases(path)
    raise_if(problems)
    assert case_set is not None
    return case_set


def read_cases(path: Path) -> tuple[CaseSet | None, list[Problem]]:
    """Every case that loads, and every problem found (not just the first). The case set is None
    when nothing loads; the cases of a file with problems are there for further checks only."""
    path = Path(path)
    try:
        if not path.exists():
            raise InputError(Problem(display(path), None, "cases not found"))
        return _load_beir(path) if path.is_dir() else _load_jsonl(path)
    except InputError as exc:
        return None, exc.problems


def _alias_clash(obj: dict, number: int, path: Path) -> Problem | None:
    for names in (GOLD_FIELDS, ANSWER_FIELDS):
        given = [n for n in names if n in obj]
        if len(given) > 1:
            listed = " and ".join(repr(n) for n in given)
            return Problem(display(path), number, f"{listed} name the same field: give only one")
    return None


def _load_jsonl(path: Path) -> tuple[CaseSet | None, list[Problem]]:
    problems: list[Problem] = []

    def prepare(obj: dict[str, Any], number: int) -> dict[str, Any] | Problem:
        clash = _alias_clash(obj, number, path)
        if clash is not None:
            return clash
        tags = obj.get("tags")
        for name in _TAGGED_FIELDS:
            if name in obj and isinstance(obj[name], str):
                value = obj.pop(name)
                if isinstance(tags, dict):
                    tags.setdefault(name, value)
                elif tags is None:
                    tags = obj["tags"] = {name: value}
        return obj

    data = read_bytes(path)  # read once: a pipe works like a file
    cases, lines = validated_records(path, problems, model=Case, what="case", prepare=prepare,
                                     empty="no cases: the file is empty", data=data)
    if not cases:
        return None, problems
    digest = sha256_bytes(data)
    return CaseSet(tuple(cases), display(path), digest, "jsonl", lines,
                   subset=read_subset_manifest(path, digest)), problems


def _qrels_file(folder: Path) -> Path:
    for candidate in (folder / "qrels.tsv", folder / "qrels" / "test.tsv"):
        if candidate.is_file():
            return candidate
    raise InputError(Problem(display(folder), None, "BEIR folder has no qrels.tsv (or qrels/test.tsv)"))


def load_qrels(path: Path, problems: list[Problem]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """BEIR/TREC qrels → ``{query_id: [relevant ids]}`` (score ≥ 1 is relevant, as trec_eval)."""
    gold: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    for number, text in iter_lines(path, problems):
        cols = text.split("\t") if "\t" in text else text.split()
        if number == 1 and cols[:2] == ["query-id", "corpus-id"]:
            continue
        if len(cols) == 4:  # TREC qrels: qid iter docid rel
            cols = [cols[0], cols[2], cols[3]]
        if len(cols) != 3:
            problems.append(Problem(display(path), number,
                                    f"expected 3 columns (query-id corpus-id score), got {len(cols)}"))
            continue
        qid, doc, score = (c.strip() for c in cols)
        try:
            value = float(score)
        except ValueError:
            problems.append(Problem(display(path), number, f"score {quote(score)} is not a number"))
            continue
        if not math.isfinite(value):
            problems.append(Problem(display(path), number, f"score {quote(score)} is not a finite number"))
            continue
        too_long = id_problem(qid, "query id") or id_problem(doc, "corpus id")
        if too_long is not None:
            problems.append(Problem(display(path), number, too_long))
            continue
        relevance = int(value)
        first_line.setdefault(qid, number)
        ids = gold.setdefault(qid, [])
        if relevance >= 1 and doc not in ids:
            ids.append(doc)
    return gold, first_line


def _load_beir(folder: Path) -> tuple[CaseSet | None, list[Problem]]:
    queries = folder / "queries.jsonl"
    if not queries.is_file():
        raise InputError(Problem(display(folder), None,
                                 "not a BEIR folder: queries.jsonl is missing"))
    qrels_path = _qrels_file(folder)
    problems: list[Problem] = []
    gold, qrel_lines = load_qrels(qrels_path, problems)

    def prepare(obj: dict[str, Any], number: int) -> dict[str, Any] | Problem:
        qid = obj.get("_id", obj.get("id"))
        if qid is None:
            return Problem(display(queries), number, "missing required field '_id'")
        if isinstance(qid, bool) or not isinstance(qid, str | int):
            return Problem(display(queries), number, "field '_id' must be a string or an integer")
        return {"id": str(qid), "query": obj.get("text", ""), "gold": tuple(gold.get(str(qid), ()))}

    cases, lines = validated_records(queries, problems, model=Case, what="query", prepare=prepare,
                                     empty="no queries: the file is empty")
    for qid, number in qrel_lines.items():
        if qid not in lines:
            problems.append(Problem(display(qrels_path), number,
                                    f"query id {quote(qid)} is not in queries.jsonl"))
    if not cases:
        return None, problems
    digest = sha256_path(queries) + sha256_path(qrels_path)
    return CaseSet(tuple(cases), display(folder), sha256_bytes(digest.encode()), "beir", lines), problems
