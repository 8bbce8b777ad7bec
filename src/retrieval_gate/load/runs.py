"""Precomputed runs: TREC run files (``qid Q0 docid rank score tag``) or JSONL
(``{"id": case_id, "retrieved": [ids…]}``, optional ``scores``, ``error``, ``latency_ms``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import sha256_path
from retrieval_gate.load.fastpath import fast_trec
from retrieval_gate.load.textfile import display, iter_json_objects, iter_lines, raise_if, read_bytes
from retrieval_gate.models import RankedList


@dataclass(frozen=True)
class Run:
    rankings: dict[str, RankedList]
    path: str
    sha256: str
    format: str  # "trec" | "jsonl"


def load_run(path: Path) -> Run:
    path = Path(path)
    problems: list[Problem] = []
    first = next(iter_lines(path, []), None)
    if first is None:
        raise InputError(Problem(display(path), None, "run is empty"))
    if first[1].lstrip().startswith("{"):
        rankings, fmt = _load_jsonl(path, problems), "jsonl"
    else:
        rankings, fmt = _load_trec(path, problems), "trec"
    raise_if(problems)
    return Run(rankings, display(path), sha256_path(path), fmt)


def _load_trec(path: Path, problems: list[Problem]) -> dict[str, RankedList]:
    """Rows are ordered as trec_eval orders them: score descending, ties by docid descending
    (the rank column is read for validation only), so numbers match trec_eval on the same file."""
    fast = fast_trec(read_bytes(path))  # a well-formed file in one pass (load/fastpath.py)
    if fast is not None:
        return fast
    rows: dict[str, list[tuple[float, str]]] = {}
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) != 6:
            problems.append(Problem(display(path), number,
                                    f"expected 6 columns (qid Q0 docid rank score tag), got {len(cols)}"))
            continue
        qid, _, doc, rank, score, _ = cols
        try:
            int(rank)
            value = float(score)
        except ValueError:
            problems.append(Problem(display(path), number,
                                    f"rank {rank!r} must be an integer and score {score!r} a number"))
            continue
        if value != value:  # NaN
            problems.append(Problem(display(path), number, "score is NaN"))
            continue
        rows.setdefault(qid, []).append((value, doc))
    out = {}
    for qid, pairs in rows.items():
        ordered = sorted(pairs, key=lambda p: (p[0], p[1]), reverse=True)
        out[qid] = RankedList(ids=tuple(d for _, d in ordered), scores=tuple(s for s, _ in ordered))
    return out


def _load_jsonl(path: Path, problems: list[Problem]) -> dict[str, RankedList]:
    out: dict[str, RankedList] = {}
    lines: dict[str, int] = {}
    for number, obj in iter_json_objects(path, problems):
        qid = obj.get("id", obj.get("qid"))
        retrieved = obj.get("retrieved", [])
        scores = obj.get("scores")
        error = obj.get("error")
        unknown = set(obj) - {"id", "qid", "retrieved", "scores", "error", "latency_ms"}
        where = Problem(display(path), number, "")
        if unknown:
            problems.append(_at(where, f"unknown field {sorted(unknown)[0]!r}"))
            continue
        if not isinstance(qid, str | int) or isinstance(qid, bool) or qid == "":
            problems.append(_at(where, "missing or invalid 'id'"))
            continue
        qid = str(qid)
        if not isinstance(retrieved, list) or not all(isinstance(d, str | int) for d in retrieved):
            problems.append(_at(where, "field 'retrieved' must be a list of ids"))
            continue
        if scores is not None and (
            not isinstance(scores, list) or len(scores) != len(retrieved)
            or not all(isinstance(s, int | float) and not isinstance(s, bool) for s in scores)
        ):
            problems.append(_at(where, "field 'scores' must be a list of numbers, one per id"))
            continue
        if error is not None and not isinstance(error, str):
            problems.append(_at(where, "field 'error' must be a string"))
            continue
        latency = obj.get("latency_ms")
        if latency is not None and (not isinstance(latency, int | float) or isinstance(latency, bool)):
            problems.append(_at(where, "field 'latency_ms' must be a number"))
            continue
        if qid in lines:
            problems.append(_at(where, f"duplicate id {qid!r} (first at line {lines[qid]})"))
            continue
        lines[qid] = number
        out[qid] = RankedList(
            ids=tuple(str(d) for d in retrieved),
            scores=tuple(float(s) for s in scores) if scores is not None else None,
            error=error,
            latency_ms=float(latency) if latency is not None else None,
        )
    return out


def _at(where: Problem, message: str) -> Problem:
    return Problem(where.path, where.line, message)
