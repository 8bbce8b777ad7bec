"""Golden sets: a JSONL file of cases, a BEIR folder (``queries.jsonl`` + ``qrels.tsv``), or a bare
qrels file (TREC ``qid iter docid rel`` or BEIR ``query-id corpus-id score``; no query text, so
it serves ``score``, not ``eval``).

Qrels are read as trec_eval reads them: the grade is kept (an integer; ``-1``, ``0``: judged,
not relevant), blank lines and lines starting with ``#`` are skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import sha256_bytes, sha256_path
from retrieval_gate.load.boundary import id_problem, quote, score_problem
from retrieval_gate.load.subset_manifest import read_subset_manifest
from retrieval_gate.load.textfile import (
    display,
    iter_lines,
    raise_if,
    read_bytes,
    validated_records,
)
from retrieval_gate.models import ANSWER_FIELDS, GOLD_FIELDS, Case, CaseSet

# Fields of the common golden_set.jsonl layout that are documentation or slicing, not scoring.
_TAGGED_FIELDS = ("type", "difficulty", "split")  # split: dev|heldout|… (the audit reads it)


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
        if path.is_dir():
            return _load_beir(path)
        return _load_qrels_only(path) if _looks_like_qrels(path) else _load_jsonl(path)
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
    pooled: list[str] = []  # ids of cases written by `label apply` from a draft (pool provenance)

    def prepare(obj: dict[str, Any], number: int) -> dict[str, Any] | Problem:
        clash = _alias_clash(obj, number, path)
        if clash is not None:
            return clash
        # provenance (`label apply --draft`): documentation, not scoring; a pool's systems named in
        # it: the case was judged from a pool (models.CaseSet.pooled)
        if isinstance(obj.get("source"), dict) and "pool_systems" in obj.pop("source"):
            pooled.append(str(obj.get("id")))
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
    cases, lines = validated_records(path, problems=problems, model=Case, what="case", prepare=prepare,
                                     empty="no cases: the file is empty", data=data)
    if not cases:
        return None, problems
    digest = sha256_bytes(data)
    return CaseSet(tuple(cases), display(path), digest, "jsonl", lines,
                   subset=read_subset_manifest(path, cases_sha256=digest), pooled=bool(pooled)), problems


def qrels_path(cases: Path) -> Path:
    """The file that holds a golden set's judgements in qrels form: a BEIR folder's qrels file,
    or a bare qrels file itself."""
    return _qrels_file(cases) if cases.is_dir() else cases


def _qrels_file(folder: Path) -> Path:
    for candidate in (folder / "qrels.tsv", folder / "qrels" / "test.tsv"):
        if candidate.is_file():
            return candidate
    raise InputError(Problem(display(folder), None, "BEIR folder has no qrels.tsv (or qrels/test.tsv)"))


def _looks_like_qrels(path: Path) -> bool:
    """A file whose first line that is not blank or a ``#`` comment is not a JSON object (a file
    of comments only is an empty qrels file: JSONL has no comments)."""
    comments = False
    for _, text in iter_lines(path, problems=[]):
        stripped = text.lstrip()
        if stripped.startswith("#"):
            comments = True
            continue
        return not stripped.startswith("{")
    return comments


def load_qrels(path: Path, problems: list[Problem]) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """BEIR/TREC qrels → ``{query_id: {doc id: grade}}`` in file order, and each query's first
    line. Blank and ``#`` lines are skipped; a pair given twice with different grades is a
    problem (which grade holds would be a guess)."""
    gold: dict[str, dict[str, int]] = {}
    first_line: dict[str, int] = {}
    header_seen = False
    for number, text in iter_lines(path, problems=problems):
        if text.lstrip().startswith("#"):
            continue
        cols = text.split("\t") if "\t" in text else text.split()
        if not header_seen and cols[:2] == ["query-id", "corpus-id"]:
            header_seen = True
            continue
        header_seen = True
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
        refused = score_problem(value, text=score) or id_problem(qid, what="query id") \
            or id_problem(doc, what="corpus id")
        if refused is not None:
            problems.append(Problem(display(path), number, refused))
            continue
        relevance = int(value)
        first_line.setdefault(qid, number)
        grades = gold.setdefault(qid, {})
        if grades.get(doc, relevance) != relevance:
            problems.append(Problem(display(path), number, f"query {qid!r} judges {doc!r} again with "
                                    f"another grade ({grades[doc]}, then {relevance})"))
            continue
        grades[doc] = relevance
    return gold, first_line


def _load_qrels_only(path: Path) -> tuple[CaseSet | None, list[Problem]]:
    """A bare qrels file: one case per judged query, without query text (``score`` only)."""
    problems: list[Problem] = []
    gold, lines = load_qrels(path, problems)
    cases = [Case(id=qid, query="-", gold=grades).model_copy(update={"query": ""})
             for qid, grades in gold.items()]
    if not cases:
        if not problems:
            problems.append(Problem(display(path), None, "no judgements: the qrels file is empty"))
        return None, problems
    return CaseSet(tuple(cases), display(path), sha256_path(path), "qrels", lines), problems


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
        return {"id": str(qid), "query": obj.get("text", ""), "gold": gold.get(str(qid), {})}

    cases, lines = validated_records(queries, problems=problems, model=Case, what="query", prepare=prepare,
                                     empty="no queries: the file is empty")
    for qid, number in qrel_lines.items():
        if qid not in lines:
            problems.append(Problem(display(qrels_path), number,
                                    f"query id {quote(qid)} is not in queries.jsonl"))
    if not cases:
        return None, problems
    digest = sha256_path(queries) + sha256_path(qrels_path)
    return CaseSet(tuple(cases), display(folder), sha256_bytes(digest.encode()), "beir", lines), problems
