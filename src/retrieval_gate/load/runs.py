"""Precomputed runs: TREC run files (``qid Q0 docid rank score tag``; further columns are ignored,
as trec_eval ignores them) or JSONL
(``{"id": case_id, "retrieved": [ids…]}``, optional ``scores``, ``error``, ``latency_ms``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from retrieval_gate.errors import InputError, Problem
from retrieval_gate.files import sha256_bytes
from retrieval_gate.load.boundary import MAX_RECORDS, id_problem, quote, score_problem
from retrieval_gate.load.fastpath import fast_trec
from retrieval_gate.load.textfile import display, iter_json_objects, iter_lines, raise_if, read_bytes
from retrieval_gate.models import RankedList


@dataclass(frozen=True)
class Run:
    rankings: dict[str, RankedList]
    path: str
    sha256: str
    format: str  # "trec" | "jsonl"


def check_run_matches(*, run_ids: Iterable[str], case_ids: Sequence[str], run_path: str,
                      cases_path: str) -> str | None:
    """The one check of a run file against the golden set (``score``, and ``eval`` / the action
    with a ``run:`` retriever): no case in the run is an ``InputError`` (a run of other queries
    would score 0 with exit 0); some cases missing → the warning to show (they count as failed)."""
    present = set(run_ids)
    missing = [cid for cid in case_ids if cid not in present]
    if not missing:
        return None
    if len(missing) == len(case_ids):
        run_example = ", ".join(quote(i, limit=40) for i in sorted(present)[:2]) or "none"
        case_example = ", ".join(quote(i, limit=40) for i in case_ids[:2])
        raise InputError(Problem(run_path, None, f"none of the {len(case_ids)} cases of {cases_path} is in the run: "
                                 f"its ids ({run_example}) do not match the cases' ids ({case_example}); "
                                 "is it the run of this golden set (and not an empty pipe)?"))
    return (f"{run_path}: {len(missing)} of {len(case_ids)} cases are not in the run "
            f"(e.g. {quote(missing[0], limit=40)}); they count as failed")


def load_run(path: Path) -> Run:
    """Read the run exactly once (so ``--run <(…)`` and ``/dev/stdin`` score like the file)."""
    path = Path(path)
    problems: list[Problem] = []
    data = read_bytes(path)
    first = next(iter_lines(path, problems=[], data=data), None)
    if first is None:
        raise InputError(Problem(display(path), None, "run is empty"))
    if first[1].lstrip().startswith("{"):
        rankings, fmt = _load_jsonl(path, problems, data), "jsonl"
    else:
        rankings, fmt = _load_trec(path, problems, data), "trec"
    raise_if(problems)
    return Run(rankings, display(path), sha256_bytes(data), fmt)


def _load_trec(path: Path, problems: list[Problem], data: bytes) -> dict[str, RankedList]:
    """Rows are ordered as trec_eval orders them: score descending, ties by docid descending
    (the rank column is read for validation only), so numbers match trec_eval on the same file."""
    fast = fast_trec(data)  # a plainly well-formed file in one pass (load/fastpath.py)
    if fast is not None:
        return fast
    rows: dict[str, list[tuple[float, str]]] = {}
    count = 0
    for number, text in iter_lines(path, problems=problems, data=data):
        cols = text.split()
        if len(cols) < 6:  # columns after the 6th are ignored, as trec_eval ignores them
            problems.append(Problem(display(path), number,
                                    f"expected 6 columns (qid Q0 docid rank score tag), got {len(cols)}"))
            continue
        qid, _, doc, rank, score = cols[:5]
        try:
            int(rank)
            value = float(score)
        except ValueError:
            problems.append(Problem(display(path), number,
                                    f"rank {quote(rank)} must be an integer and score {quote(score)} a number"))
            continue
        refused = score_problem(value, text=score) or id_problem(qid, what="query id") \
            or id_problem(doc, what="document id")
        if refused is not None:
            problems.append(Problem(display(path), number, refused))
            continue
        count += 1
        if count > MAX_RECORDS:
            problems.append(Problem(display(path), number, f"more than {MAX_RECORDS:,} rows"))
            break
        rows.setdefault(qid, []).append((value, doc))
    out = {}
    for qid, pairs in rows.items():
        ordered = sorted(pairs, key=lambda p: (p[0], p[1]), reverse=True)
        out[qid] = RankedList(ids=tuple(d for _, d in ordered), scores=tuple(s for s, _ in ordered))
    return out


def _is_id(value: object) -> bool:
    """Ids are strings or integers — never booleans (``True`` is an ``int`` to Python)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def _load_jsonl(path: Path, problems: list[Problem], data: bytes) -> dict[str, RankedList]:
    out: dict[str, RankedList] = {}
    lines: dict[str, int] = {}
    for number, obj in iter_json_objects(path, problems=problems, data=data):
        qid = obj.get("id", obj.get("qid"))
        retrieved = obj.get("retrieved", [])
        scores = obj.get("scores")
        error = obj.get("error")
        unknown = set(obj) - {"id", "qid", "retrieved", "scores", "error", "latency_ms"}
        where = Problem(display(path), number, "")
        if unknown:
            problems.append(_at(where, f"unknown field {quote(sorted(unknown)[0])}"))
            continue
        if not _is_id(qid) or qid == "":
            problems.append(_at(where, "missing or invalid 'id' (a string or an integer)"))
            continue
        qid = str(qid)
        if not isinstance(retrieved, list) or not all(_is_id(d) for d in retrieved):
            problems.append(_at(where, "field 'retrieved' must be a list of ids (strings or integers)"))
            continue
        too_long = id_problem(qid) or next(filter(None, (id_problem(str(d), what="retrieved id") for d in retrieved)),
                                           None)
        if too_long is not None:
            problems.append(_at(where, too_long))
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
            problems.append(_at(where, f"duplicate id {quote(qid)} (first at line {lines[qid]})"))
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
